/*
** testmain.c: the Check main every suite shares (the unit tests, the
** property tests): runs make_suite() in fork mode, so every test starts in
** a fresh child, and reports in the results format of docs/conventions.md.
** Not named check_*.c, which would make it a suite of its own (mk/unit.mk).
*/
#define _GNU_SOURCE
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testmain.h"

/* The test cases, in the order make_suite added them (rt_add_case). */
static const char **case_names;
static int case_count;

/* Where name, as a whole word of the blank-separated list (NULL: none),
** ends: the first place it starts the list or follows a blank and is
** followed by the end of the list or a character of ends; NULL if none. */
static const char *word_end(const char *list, const char *name, const char *ends)
{
    size_t len = strlen(name);

    for (const char *p = list; p != NULL && (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && strchr(ends, p[len]) != NULL) /* '\0' too */
            return p + len;
    return NULL;
}

/* The bound RT_CASE_TIMEOUTS ("case=seconds case=seconds ...") gives the
** case name, or NULL. */
static const char *own_bound(const char *name)
{
    const char *end = word_end(getenv("RT_CASE_TIMEOUTS"), name, "=");
    return end != NULL && *end == '=' ? end + 1 : NULL;
}

void rt_add_case(Suite *s, TCase *tc, const char *name)
{
    /* RT_CASE_TIMEOUT: the mutant driver's bound on one case, over the
    ** case's own: a mutant that loops is stopped in seconds, not minutes.
    ** RT_CASE_TIMEOUTS: a longer one for the cases that take seconds
    ** unmutated, which the driver reads from their unmutated run. */
    const char *limit = own_bound(name);
    if (limit == NULL)
        limit = getenv("RT_CASE_TIMEOUT");
    if (limit != NULL)
        tcase_set_timeout(tc, strtod(limit, NULL));
    const char **more = realloc(case_names, sizeof *more * (size_t)(case_count + 1));
    if (more == NULL) {
        perror("testmain");
        exit(2);
    }
    case_names = more;
    case_names[case_count++] = name;
    suite_add_tcase(s, tc);
}

/* Whether name is one of the blank-separated words of list. */
static int listed(const char *list, const char *name)
{
    return word_end(list, name, " ") != NULL;
}

/* RT_ONLY_CASES: the mutant driver's witness runs (docs/mutants.md,
** "Oracles") run only the cases that killed a mutant last time, on the
** unmutated build and then on the mutant. A program whose cases it names
** none of runs them all: the list is the union over several programs. */
static const char *only_cases(void)
{
    const char *only = getenv("RT_ONLY_CASES");
    for (int i = 0; only != NULL && i < case_count; i++)
        if (listed(only, case_names[i]))
            return only;
    return NULL;
}

/* RT_FAIL_FAST: the mutant driver needs one failure, not all of them. The
** cases run one at a time (Check keeps the results of every run) until
** one fails (with fail_fast 0, to the end). The cases RT_FIRST_CASES names
** (those that killed the function's mutants so far) run first: a kill
** then costs the program's start and one case, not every case before the
** one that fails. */
static void run_one_at_a_time(SRunner *sr, int fail_fast, const char *only)
{
    const char *first = getenv("RT_FIRST_CASES");
    for (int pass = first != NULL ? 0 : 1; pass < 2; pass++) {
        for (int i = 0; i < case_count; i++) {
            int named = first != NULL && listed(first, case_names[i]);
            if (fail_fast && srunner_ntests_failed(sr) > 0)
                break;
            if (named == (pass == 0) && (only == NULL || listed(only, case_names[i])))
                srunner_run(sr, NULL, case_names[i], CK_SILENT);
        }
    }
    srunner_print(sr, CK_NORMAL);
}

/* Runs the suite in fork mode. With RT_RESULTS set, appends one
** "pass <test>" or "fail <test> <where>: <msg>" line a test to that file;
** with RT_XML set, writes Check's XML log there (not with RT_FAIL_FAST
** or RT_ONLY_CASES, whose runs would each write it anew). */
int main(void)
{
    const char *results = getenv("RT_RESULTS");
    const char *xml = getenv("RT_XML");
    int fail_fast = getenv("RT_FAIL_FAST") != NULL;
    const char *only;
    SRunner *sr;
    int failed;

    /* Check's default of 4 s a test is a wall-clock bound, and this suite
    ** runs on loaded 2-core machines and under sanitizers: the timeout is
    ** only a guard against a hang, so it is generous (the environment may
    ** still set its own). */
    setenv("CK_DEFAULT_TIMEOUT", "300", 0);
    sr = srunner_create(make_suite());
    only = only_cases();

    srunner_set_fork_status(sr, CK_FORK);
    if ((fail_fast || only != NULL) && case_count > 0) {
        run_one_at_a_time(sr, fail_fast, only);
    } else {
        if (xml != NULL)
            srunner_set_xml(sr, xml);
        srunner_run_all(sr, CK_NORMAL);
    }
    failed = srunner_ntests_failed(sr);
    if (results != NULL) {
        FILE *f = fopen(results, "a");
        TestResult **all = srunner_results(sr);
        int n = srunner_ntests_run(sr);
        if (f == NULL) {
            perror(results);
            return 1;
        }
        for (int i = 0; i < n; i++) {
            if (tr_rtype(all[i]) == CK_PASS)
                fprintf(f, "pass %s\n", tr_tcname(all[i]));
            else
                fprintf(f, "fail %s %s:%d: %s\n", tr_tcname(all[i]), tr_lfile(all[i]),
                        tr_lno(all[i]), tr_msg(all[i]));
        }
        free(all);
        fclose(f);
    }
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
