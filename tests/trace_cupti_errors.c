/* SPDX-License-Identifier: MIT */
/*
 * trace_cupti_errors.c - when the tracer's CUPTI client cannot have CUPTI, it says why:
 * a library that is not there (-ENOENT), a library that is not CUPTI (-ENOENT, naming the
 * missing entry point), a second client in the process and a foreign subscriber such as a
 * running profiler (-EBUSY, saying that another subscriber holds CUPTI).  Once the other
 * subscriber lets go, opening works again.
 */
#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#include <cupti.h>

#include "../tracer/cupti.h" /* by path: CUDA has a cupti.h of its own */
#include "simtest.h"

static void sink(void *ctx, uint64_t op, int kind, uint64_t start, uint64_t end)
{
    (void)ctx, (void)op, (void)kind, (void)start, (void)end;
}

/* trc_cupti_open(lib) must fail with want and a message containing text. */
static void expect_open_fails(const char *lib, int want, const char *text)
{
    char why[256] = "";
    trc_cupti_t *c = (trc_cupti_t *)1;
    int rc = trc_cupti_open(lib, sink, NULL, &c, why, sizeof(why));
    printf("open(%s): %d: %s\n", lib ? lib : "default", rc, why);
    EXPECT(rc == want, "trc_cupti_open(%s): expected %d, got %d (%s)", lib ? lib : "default",
           want, rc, why);
    EXPECT(c == NULL, "no client on failure");
    EXPECT(strstr(why, text) != NULL, "the reason mentions \"%s\": %s", text, why);
}

static void no_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *p)
{
    (void)u, (void)d, (void)id, (void)p;
}

int main(void)
{
    char why[256] = "";
    trc_cupti_t *c;
    st_setup(0);
    expect_open_fails("/nonexistent/libcupti.so", -ENOENT, "/nonexistent/libcupti.so");
    expect_open_fails("libm.so.6", -ENOENT, "has no cuptiSubscribe");

    EXPECT(trc_cupti_open(NULL, sink, NULL, &c, why, sizeof(why)) == 0, "first client: %s",
           why);
    expect_open_fails(NULL, -EBUSY, "subscriber");
    trc_cupti_close(c);

    /* A profiler subscribed first, through the library's own API. */
    void *lib = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
    EXPECT(lib != NULL, "dlopen(libcupti.so): %s", dlerror());
    __typeof__(cuptiSubscribe) *subscribe;
    __typeof__(cuptiUnsubscribe) *unsubscribe;
    *(void **)&subscribe = dlsym(lib, "cuptiSubscribe");
    *(void **)&unsubscribe = dlsym(lib, "cuptiUnsubscribe");
    EXPECT(subscribe && unsubscribe, "the stand-in exports cuptiSubscribe and cuptiUnsubscribe");
    CUpti_SubscriberHandle other;
    EXPECT(subscribe(&other, no_callback, NULL) == CUPTI_SUCCESS, "the profiler subscribes");
    expect_open_fails(NULL, -EBUSY, "subscriber");
    EXPECT(unsubscribe(other) == CUPTI_SUCCESS, "the profiler lets go");
    EXPECT(trc_cupti_open(NULL, sink, NULL, &c, why, sizeof(why)) == 0,
           "open after the profiler left: %s", why);
    EXPECT(trc_cupti_enable(c, 1) == 0, "enable");
    trc_cupti_close(c);
    printf("trace_cupti_errors: passed\n");
    return 0;
}
