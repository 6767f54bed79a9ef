/*
** check_hot_ctor.c: the runtime called from a program's constructor.
**
** docs/hot-path.md: hot_start installs the NULL word's offset at priority
** 101, the first a program may use, so a constructor of any later priority
** may call the runtime: its fast path reads the NULL word, takes the cold
** path, and gets the thread's own state, the one its key holds. A program
** of its own, because its constructor runs before every test of it.
*/
#include <pthread.h>

#include "internal.h"
#include "refrt.h"
#include "testutil.h"

static struct rt_hot *in_ctor, *again_in_ctor, *key_in_ctor;
static unsigned kept_in_ctor, kept_before;

__attribute__((constructor(102))) static void call_the_runtime_from_a_constructor(void)
{
    rt_init();
    in_ctor = rt_hot();
    again_in_ctor = rt_hot();
    key_in_ctor = pthread_getspecific((pthread_key_t)(rt__key_plus_one - 1));
    kept_before = rt_chunk_kept();
    unsigned char *c = rt_chunk_take();
    rt_chunk_give(c, c + 1);
    kept_in_ctor = rt_chunk_kept();
}

START_TEST(a_constructor_after_priority_101_gets_its_threads_own_state)
{
    ck_assert_ptr_nonnull(in_ctor);
    ck_assert_ptr_eq(in_ctor, key_in_ctor);
    ck_assert_ptr_eq(again_in_ctor, in_ctor);
    ck_assert_uint_eq(kept_before, 0);
    ck_assert_uint_eq(kept_in_ctor, 1);
    ck_assert_ptr_eq(rt_hot(), in_ctor); /* main's, still */
    ck_assert_uint_eq(rt_chunk_kept(), 1);
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("hot_ctor");

    suite_add_test(s, a_constructor_after_priority_101_gets_its_threads_own_state);
    return s;
}
