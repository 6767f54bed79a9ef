/*
** hot_fiber.c: rt_hot() in a fiber that moves between threads (seed 003).
**
** A fiber (ucontext) reads its state, is suspended on one thread and
** resumed on another, and reads again: it must see the new thread's state.
** Seed 003 shipped a `pure` thread-pointer read that the compiler reused
** across exactly such a resume. hot.c is compiled into this file so that
** rt_hot() can be inlined here; mk/hot.mk builds it at -O2 and -O3, with
** whichever CC the variant uses. It fails when the accessor is marked
** const, or when the asm of the read is not volatile (mutants/hot_path.mut).
*/
#define _GNU_SOURCE
#include "hot.c" /* the accessor, inlinable into the fiber */

#include <pthread.h>
#include <stdint.h>
#include <ucontext.h>

#include "testutil.h"

/* TSan and ASan must be told when a stack is switched. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define FIBER_TSAN 1
#endif
#if __has_feature(address_sanitizer)
#define FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define FIBER_TSAN 1
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FIBER_ASAN 1
#endif

#ifdef FIBER_TSAN
void *__tsan_get_current_fiber(void);
void *__tsan_create_fiber(unsigned flags);
void __tsan_destroy_fiber(void *fiber);
void __tsan_switch_to_fiber(void *fiber, unsigned flags);
#endif
#ifdef FIBER_ASAN
void __sanitizer_start_switch_fiber(void **fake_stack_save, const void *bottom, size_t size);
void __sanitizer_finish_switch_fiber(void *fake_stack_save, const void **bottom_old,
                                     size_t *size_old);
#endif

#define FIBER_STACK (256 * 1024)

static _Alignas(16) char fiber_stack[FIBER_STACK];
static ucontext_t fiber_ctx;
static ucontext_t *volatile resume_to; /* the thread the fiber goes back to */
#ifdef FIBER_TSAN
static void *tsan_fiber, *tsan_resume_to;
#endif
#ifdef FIBER_ASAN
static const void *asan_thread_bottom;
static size_t asan_thread_size;
#endif

/* What the fiber saw before and after it moved. */
static struct rt_hot *seen_hot[2];   /* rt_hot(), the public accessor */
static struct rt_hot *seen_inner[2]; /* rt__hot_or_null(), the runtime's */
#if RT_PRIM_DIRECT
static void *seen_slot[2]; /* the raw slot read, one offset held */
static intptr_t held_off;
#endif

/* From a thread to the fiber and back. */
static void switch_to_fiber(ucontext_t *here)
{
    resume_to = here;
#ifdef FIBER_TSAN
    tsan_resume_to = __tsan_get_current_fiber();
    __tsan_switch_to_fiber(tsan_fiber, 0);
#endif
#ifdef FIBER_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, fiber_stack, FIBER_STACK);
#endif
    ck_assert_int_eq(swapcontext(here, &fiber_ctx), 0);
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* From the fiber back to the thread that resumed it. */
static void fiber_yield(void)
{
#ifdef FIBER_TSAN
    __tsan_switch_to_fiber(tsan_resume_to, 0);
#endif
#ifdef FIBER_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, asan_thread_bottom, asan_thread_size);
#endif
    swapcontext(&fiber_ctx, resume_to);
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(fake, &asan_thread_bottom, &asan_thread_size);
#endif
}

/* The fiber. Both reads of each pair are the same expression with the
** same inputs: only a read the compiler must redo sees the move. */
static void fiber_body(void)
{
#ifdef FIBER_ASAN
    __sanitizer_finish_switch_fiber(NULL, &asan_thread_bottom, &asan_thread_size);
#endif
#if RT_PRIM_DIRECT
    intptr_t off = held_off;
#endif
    seen_hot[0] = rt_hot();
    seen_inner[0] = rt__hot_or_null();
#if RT_PRIM_DIRECT
    seen_slot[0] = rt_prim_slot_read(off);
#endif
    fiber_yield(); /* suspended on the first thread, resumed on the second */
    seen_hot[1] = rt_hot();
    seen_inner[1] = rt__hot_or_null();
#if RT_PRIM_DIRECT
    seen_slot[1] = rt_prim_slot_read(off);
#endif
    fiber_yield();
}

struct mover {
    pthread_barrier_t *moved; /* the first thread lives until the move */
    struct rt_hot *mine;
};

static int first_half_done;

static void *mover_thread(void *arg)
{
    struct mover *m = arg;
    ucontext_t here;
    m->mine = rt_hot();
    switch_to_fiber(&here);
    __atomic_store_n(&first_half_done, 1, __ATOMIC_RELEASE);
    pthread_barrier_wait(m->moved);
    return NULL;
}

static void migrate(void)
{
    pthread_barrier_t moved;
    pthread_t t1, t2;
    struct mover m1 = {&moved, NULL}, m2 = {&moved, NULL};

    ck_assert_int_eq(getcontext(&fiber_ctx), 0);
    fiber_ctx.uc_stack.ss_sp = fiber_stack;
    fiber_ctx.uc_stack.ss_size = sizeof fiber_stack;
    fiber_ctx.uc_link = NULL;
    makecontext(&fiber_ctx, fiber_body, 0);
#ifdef FIBER_TSAN
    tsan_fiber = __tsan_create_fiber(0);
#endif
    ck_assert_int_eq(pthread_barrier_init(&moved, NULL, 2), 0);
    ck_assert_int_eq(pthread_create(&t1, NULL, mover_thread, &m1), 0);
    /* Wait until the fiber ran its first half on t1 and yielded. */
    while (!__atomic_load_n(&first_half_done, __ATOMIC_ACQUIRE))
        sched_yield();
    ck_assert_int_eq(pthread_create(&t2, NULL, mover_thread, &m2), 0);
    ck_assert_int_eq(pthread_join(t2, NULL), 0);
    ck_assert_int_eq(pthread_join(t1, NULL), 0);
    pthread_barrier_destroy(&moved);
#ifdef FIBER_TSAN
    __tsan_destroy_fiber(tsan_fiber);
#endif

    ck_assert_ptr_nonnull(m1.mine);
    ck_assert_ptr_nonnull(m2.mine);
    ck_assert_ptr_ne(m1.mine, m2.mine);
    ck_assert_ptr_eq(seen_hot[0], m1.mine);
    ck_assert_msg(seen_hot[1] == m2.mine,
                  "after the move the fiber saw %p, the first thread's state %p, not %p",
                  (void *)seen_hot[1], (void *)m1.mine, (void *)m2.mine);
    ck_assert_ptr_eq(seen_inner[0], m1.mine);
    ck_assert_msg(seen_inner[1] == m2.mine,
                  "after the move the runtime's accessor saw %p, not %p",
                  (void *)seen_inner[1], (void *)m2.mine);
}

START_TEST(a_fiber_moved_to_another_thread_sees_its_state_direct)
{
    rt_init();
    ck_assert_ptr_nonnull(rt_hot());
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
#if RT_PRIM_DIRECT
    held_off = __atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED);
#endif
    migrate();
    ck_assert_int_eq(rt_hot_direct(), RT_PRIM_DIRECT);
#if RT_PRIM_DIRECT
    /* The primitive itself, with one offset held across the move. */
    ck_assert_ptr_eq(seen_slot[0], seen_hot[0]);
    ck_assert_msg(seen_slot[1] == seen_hot[1],
                  "the slot read with a held offset was reused across the move");
#endif
}
END_TEST

START_TEST(a_fiber_moved_to_another_thread_sees_its_state_fallback)
{
    rt_init();
    rt_hot_disable();
    ck_assert_ptr_nonnull(rt_hot());
#if RT_PRIM_DIRECT
    held_off = __atomic_load_n(&rt__hot_off, __ATOMIC_RELAXED);
#endif
    migrate();
    ck_assert(!rt_hot_direct());
#if RT_PRIM_DIRECT
    ck_assert_ptr_null(seen_slot[0]); /* the NULL word */
    ck_assert_ptr_null(seen_slot[1]);
#endif
}
END_TEST

Suite *make_suite(void)
{
    Suite *s = suite_create("hot_fiber");
    suite_add_test(s, a_fiber_moved_to_another_thread_sees_its_state_direct);
    suite_add_test(s, a_fiber_moved_to_another_thread_sees_its_state_fallback);
    return s;
}
