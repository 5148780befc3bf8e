/* SPDX-License-Identifier: MIT */
/*
 * subscribe.c - the one subscriber, result strings and the version of the stand-in.
 *
 * CUPTI admits a single subscriber per process; a second cuptiSubscribe fails with
 * CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, which is how a tool learns that a profiler
 * already holds CUPTI.  The stand-in implements no callback domains, so a subscriber's
 * callback is never called.  Result names and messages come from cupti_result.h itself
 * (sim/gen_errors.awk, at build time).
 */
#include <pthread.h>
#include <stdio.h>

#include "cupti_sim.h"

struct CUpti_Subscriber_st {
    CUpti_CallbackFunc callback;
    void *userdata;
    char name[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN];
};

static pthread_mutex_t sub_lock = PTHREAD_MUTEX_INITIALIZER;
static struct CUpti_Subscriber_st the_subscriber;
static int subscribed;          /* under sub_lock */

typedef struct result_row {
    CUptiResult value;
    const char *name;
    const char *message;
} result_row_t;

static const result_row_t results[] = {
#include "cupti_results.h"
};

static CUptiResult subscribe(CUpti_SubscriberHandle *out, CUpti_CallbackFunc cb, void *ud,
                             const char *name, char *old, size_t old_size)
{
    if (!out)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sub_lock);
    if (subscribed) {
        if (old && old_size)
            snprintf(old, old_size, "%s", the_subscriber.name);
        pthread_mutex_unlock(&sub_lock);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    subscribed = 1;
    the_subscriber.callback = cb;
    the_subscriber.userdata = ud;
    snprintf(the_subscriber.name, sizeof(the_subscriber.name), "CUPTI for %.*s",
             CUPTI_SUBSCRIBER_NAME_MAX_LEN, name ? name : "unnamed subscriber");
    *out = &the_subscriber;
    pthread_mutex_unlock(&sub_lock);
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiSubscribe(CUpti_SubscriberHandle *subscriber,
                                                 CUpti_CallbackFunc callback, void *userdata)
{
    return subscribe(subscriber, callback, userdata, NULL, NULL, 0);
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiSubscribe_v2(CUpti_SubscriberHandle *subscriber,
                                                    CUpti_CallbackFunc callback, void *userdata,
                                                    CUpti_SubscriberParams *p)
{
    if (p && p->structSize == 0)
        return CUPTI_ERROR_INVALID_PARAMETER;
    return subscribe(subscriber, callback, userdata, p ? p->subscriberName : NULL,
                     p ? p->oldSubscriberName : NULL, p ? p->oldSubscriberSize : 0);
}

/* CUPTI detached from the process: as if freshly loaded, with no kind on, no buffer
 * callbacks (the records still queued are delivered first) and no subscriber. */
CUPTI_EXPORT CUptiResult CUPTIAPI cuptiFinalize(void)
{
    sim_cupti_activity_off();
    sim_cupti_buffers_forget();
    pthread_mutex_lock(&sub_lock);
    subscribed = 0;
    pthread_mutex_unlock(&sub_lock);
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sub_lock);
    if (subscriber && subscriber == &the_subscriber && subscribed) {
        subscribed = 0;
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&sub_lock);
    return r;
}

static const result_row_t *find_result(CUptiResult r)
{
    for (size_t i = 0; i < sizeof(results) / sizeof(results[0]); i++)
        if (results[i].value == r)
            return &results[i];
    return NULL;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiGetResultString(CUptiResult result, const char **str)
{
    const result_row_t *row = find_result(result);
    if (!str || !row)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *str = row->name;
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiGetErrorMessage(CUptiResult result, const char **str)
{
    const result_row_t *row = find_result(result);
    if (!str || !row)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *str = row->message;
    return CUPTI_SUCCESS;
}

CUPTI_EXPORT CUptiResult CUPTIAPI cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}
