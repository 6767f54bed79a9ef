/*
** testmain.h: what a suite file tells testmain.c, the Check main every
** suite shares.
*/
#ifndef REFRT_TESTMAIN_H
#define REFRT_TESTMAIN_H

#include <check.h>

/* The suite of the program: every test case added with rt_add_case. */
Suite *make_suite(void);

/* suite_add_tcase(s, tc), and tc's name noted, so that RT_FAIL_FAST can
** run the cases one at a time and stop at the first that fails; with
** RT_CASE_TIMEOUT set, tc's timeout becomes that many seconds; the cases
** RT_FIRST_CASES names run first under RT_FAIL_FAST. A case
** added with suite_add_tcase itself would not run under RT_FAIL_FAST. */
void rt_add_case(Suite *s, TCase *tc, const char *name);

#endif
