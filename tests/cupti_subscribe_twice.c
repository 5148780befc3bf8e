/* SPDX-License-Identifier: MIT */
/*
 * cupti_subscribe_twice.c - CUPTI admits one subscriber: a second cuptiSubscribe (or
 * cuptiSubscribe_v2) fails with CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, which is how a
 * tool learns that a profiler already holds CUPTI; _v2 names the holder.  Unsubscribing
 * accepts only the live handle, and frees the place for a new subscriber; so does
 * cuptiFinalize (CUPTI detached from the process).
 */
#include "cupti_test.h"

static void CUPTIAPI callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                              const void *data)
{
}

int main(void)
{
    CUpti_SubscriberHandle first = NULL, second = NULL, third = NULL;
    char holder[CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN] = "";

    ct_open();
    CUpti_SubscriberParams p = { CUpti_SubscriberParams_STRUCT_SIZE, "profiler", NULL, 0 };
    CHECK_CUPTI(ct.subscribe_v2(&first, callback, NULL, &p));
    EXPECT(first != NULL, "a subscriber handle");

    EXPECT_CUPTI(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                 ct.subscribe(&second, callback, NULL));
    CUpti_SubscriberParams q = { CUpti_SubscriberParams_STRUCT_SIZE, "elixir", holder,
                                 sizeof(holder) };
    EXPECT_CUPTI(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                 ct.subscribe_v2(&second, callback, NULL, &q));
    EXPECT(strstr(holder, "profiler") != NULL, "the holder is named: got \"%s\"", holder);

    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.unsubscribe(NULL));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER,
                 ct.unsubscribe((CUpti_SubscriberHandle)(uintptr_t)&holder));
    CHECK_CUPTI(ct.unsubscribe(first));
    EXPECT_CUPTI(CUPTI_ERROR_INVALID_PARAMETER, ct.unsubscribe(first));

    CHECK_CUPTI(ct.subscribe(&third, callback, NULL));
    EXPECT_CUPTI(CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED,
                 ct.subscribe(&second, NULL, NULL));
    CHECK_CUPTI(ct.finalize());
    CHECK_CUPTI(ct.subscribe(&second, callback, NULL));
    CHECK_CUPTI(ct.unsubscribe(second));
    return 0;
}
