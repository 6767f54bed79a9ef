/*
** cross/check.h: the part of Check's API the hot-path suites use, for a
** cross build run under qemu-user, where libcheck for the target is not
** installed (mk/hot.mk, check-hot-aarch64). Native builds use Check itself;
** this is never on their include path.
**
** Same shape as Check: START_TEST defines name##_fn; every test runs in a
** forked child; a failed assertion reports "file:line: message". No XML
** log: srunner_set_xml is accepted and ignored.
*/
#ifndef REFRT_CROSS_CHECK_H
#define REFRT_CROSS_CHECK_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

enum test_result { CK_TEST_RESULT_INVALID, CK_PASS, CK_FAILURE, CK_ERROR };
enum fork_status { CK_FORK_GETENV, CK_NOFORK, CK_FORK };
enum print_output { CK_SILENT, CK_MINIMAL, CK_NORMAL, CK_VERBOSE };

typedef struct TTest {
    const char *name;
    void (*fn)(int);
} TTest;
typedef struct TCase TCase;
typedef struct Suite Suite;
typedef struct SRunner SRunner;
typedef struct TestResult TestResult;

#define START_TEST(name)                                                       \
    static void name##_fn(int _i __attribute__((unused)));                     \
    static const TTest name##_ttest = {#name, name##_fn};                      \
    static const TTest *name = &name##_ttest;                                  \
    static void name##_fn(int _i __attribute__((unused)))
#define END_TEST

Suite *suite_create(const char *name);
TCase *tcase_create(const char *name);
void tcase_set_timeout(TCase *tc, double seconds);
void tcase_add_test(TCase *tc, const TTest *t);
void suite_add_tcase(Suite *s, TCase *tc);

SRunner *srunner_create(Suite *s);
void srunner_set_fork_status(SRunner *sr, enum fork_status fs);
void srunner_set_xml(SRunner *sr, const char *path);
void srunner_run_all(SRunner *sr, enum print_output mode);
void srunner_run(SRunner *sr, const char *sname, const char *tcname, enum print_output mode);
void srunner_print(SRunner *sr, enum print_output mode);
int srunner_ntests_failed(SRunner *sr);
int srunner_ntests_run(SRunner *sr);
TestResult **srunner_results(SRunner *sr);
void srunner_free(SRunner *sr);
int tr_rtype(TestResult *tr);
const char *tr_tcname(TestResult *tr);
const char *tr_lfile(TestResult *tr);
int tr_lno(TestResult *tr);
const char *tr_msg(TestResult *tr);

_Noreturn void cross_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define ck_assert_msg(expr, ...)                                               \
    do {                                                                       \
        if (!(expr))                                                           \
            cross_fail(__FILE__, __LINE__, __VA_ARGS__);                       \
    } while (0)
#define ck_assert(expr) ck_assert_msg(expr, "Assertion '%s' failed", #expr)
#define ck_abort_msg(...) cross_fail(__FILE__, __LINE__, __VA_ARGS__)

typedef const void *cross_ptr;
#define CROSS_CMP(T, fmt, X, OP, Y)                                            \
    do {                                                                       \
        T x_ = (X), y_ = (Y);                                                  \
        ck_assert_msg(x_ OP y_, "Assertion '%s' failed: %s == " fmt ", %s == " fmt, \
                      #X " " #OP " " #Y, #X, x_, #Y, y_);                      \
    } while (0)
#define ck_assert_int_eq(X, Y) CROSS_CMP(intmax_t, "%jd", X, ==, Y)
#define ck_assert_int_ge(X, Y) CROSS_CMP(intmax_t, "%jd", X, >=, Y)
#define ck_assert_uint_eq(X, Y) CROSS_CMP(uintmax_t, "%ju", X, ==, Y)
#define ck_assert_uint_ne(X, Y) CROSS_CMP(uintmax_t, "%ju", X, !=, Y)
#define ck_assert_uint_ge(X, Y) CROSS_CMP(uintmax_t, "%ju", X, >=, Y)
#define ck_assert_uint_lt(X, Y) CROSS_CMP(uintmax_t, "%ju", X, <, Y)
#define ck_assert_ptr_eq(X, Y) CROSS_CMP(cross_ptr, "%p", X, ==, Y)
#define ck_assert_ptr_ne(X, Y) CROSS_CMP(cross_ptr, "%p", X, !=, Y)
#define ck_assert_ptr_null(X) CROSS_CMP(cross_ptr, "%p", X, ==, NULL)
#define ck_assert_ptr_nonnull(X) CROSS_CMP(cross_ptr, "%p", X, !=, NULL)

#endif
