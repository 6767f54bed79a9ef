/*
** cross/check.c: the runner behind cross/check.h: a forked child a test,
** a timeout by alarm, a failure reported through a pipe.
*/
#define _GNU_SOURCE
#include "check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_TESTS 64

struct TCase {
    const char *name;
    unsigned timeout;
    const TTest *tests[MAX_TESTS];
    int n;
};
struct Suite {
    const char *name;
    TCase *tcases[MAX_TESTS];
    int n;
};
struct TestResult {
    int rtype;
    const char *tcname;
    char file[256];
    int line;
    char msg[1024];
};
struct SRunner {
    Suite *suite;
    TestResult results[MAX_TESTS];
    int run, failed;
};

static int report_fd = -1; /* the child's end of the pipe */

static void *cross_alloc(size_t n)
{
    void *p = calloc(1, n);
    if (p == NULL)
        abort();
    return p;
}

Suite *suite_create(const char *name)
{
    Suite *s = cross_alloc(sizeof *s);
    s->name = name;
    return s;
}

TCase *tcase_create(const char *name)
{
    TCase *tc = cross_alloc(sizeof *tc);
    tc->name = name;
    tc->timeout = 4;
    return tc;
}

void tcase_set_timeout(TCase *tc, double seconds)
{
    tc->timeout = (unsigned)seconds;
}

void tcase_add_test(TCase *tc, const TTest *t)
{
    if (tc->n == MAX_TESTS)
        abort();
    tc->tests[tc->n++] = t;
}

void suite_add_tcase(Suite *s, TCase *tc)
{
    if (s->n == MAX_TESTS)
        abort();
    s->tcases[s->n++] = tc;
}

SRunner *srunner_create(Suite *s)
{
    SRunner *sr = cross_alloc(sizeof *sr);
    sr->suite = s;
    return sr;
}

void srunner_set_fork_status(SRunner *sr, enum fork_status fs)
{
    (void)sr;
    (void)fs; /* always forks */
}

void srunner_set_xml(SRunner *sr, const char *path)
{
    (void)sr;
    (void)path; /* no XML log in cross builds */
}

void cross_fail(const char *file, int line, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    int n = snprintf(msg, sizeof msg, "%s:%d:", file, line);
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (report_fd >= 0 && write(report_fd, msg, strlen(msg)) < 0)
        _exit(3);
    if (report_fd < 0)
        fprintf(stderr, "%s\n", msg);
    _exit(1);
}

static void run_one(SRunner *sr, TCase *tc, const TTest *t)
{
    TestResult *r = &sr->results[sr->run++];
    char buf[1024] = {0};
    int fds[2], status;
    ssize_t got = 0, n;
    pid_t pid;

    r->tcname = tc->name;
    if (pipe(fds) != 0)
        abort();
    fflush(NULL);
    pid = fork();
    if (pid < 0)
        abort();
    if (pid == 0) {
        close(fds[0]);
        report_fd = fds[1];
        alarm(tc->timeout);
        t->fn(0);
        _exit(0);
    }
    close(fds[1]);
    while (got < (ssize_t)sizeof buf - 1 &&
           (n = read(fds[0], buf + got, sizeof buf - 1 - (size_t)got)) > 0)
        got += n;
    close(fds[0]);
    waitpid(pid, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        r->rtype = CK_PASS;
        return;
    }
    sr->failed++;
    r->rtype = CK_FAILURE;
    if (buf[0] != '\0') {
        /* "file:line:message" */
        char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c1 != NULL && c2 != NULL) {
            *c1 = *c2 = '\0';
            snprintf(r->file, sizeof r->file, "%s", buf);
            r->line = atoi(c1 + 1);
            snprintf(r->msg, sizeof r->msg, "%s", c2 + 1);
            return;
        }
    }
    r->rtype = CK_ERROR;
    snprintf(r->file, sizeof r->file, "%s", t->name);
    if (WIFSIGNALED(status))
        snprintf(r->msg, sizeof r->msg, "Received signal %d", WTERMSIG(status));
    else
        snprintf(r->msg, sizeof r->msg, "exited with %d", WEXITSTATUS(status));
}

void srunner_print(SRunner *sr, enum print_output mode)
{
    if (mode == CK_SILENT)
        return;
    printf("%d%%: Checks: %d, Failures: %d\n",
           sr->run ? 100 * (sr->run - sr->failed) / sr->run : 100, sr->run, sr->failed);
    for (int i = 0; i < sr->run; i++)
        if (sr->results[i].rtype != CK_PASS)
            printf("%s:%d:F:%s: %s\n", sr->results[i].file, sr->results[i].line,
                   sr->results[i].tcname, sr->results[i].msg);
}

/* The cases named tcname (all with NULL) of the suite named sname (the
** one suite with NULL); results add to those of earlier runs. */
void srunner_run(SRunner *sr, const char *sname, const char *tcname, enum print_output mode)
{
    Suite *s = sr->suite;
    if (sname != NULL && strcmp(sname, s->name) != 0)
        return;
    if (mode != CK_SILENT)
        printf("Running suite(s): %s\n", s->name);
    for (int i = 0; i < s->n; i++)
        if (tcname == NULL || strcmp(tcname, s->tcases[i]->name) == 0)
            for (int j = 0; j < s->tcases[i]->n; j++)
                run_one(sr, s->tcases[i], s->tcases[i]->tests[j]);
    srunner_print(sr, mode);
}

void srunner_run_all(SRunner *sr, enum print_output mode)
{
    srunner_run(sr, NULL, NULL, mode);
}

int srunner_ntests_failed(SRunner *sr)
{
    return sr->failed;
}

int srunner_ntests_run(SRunner *sr)
{
    return sr->run;
}

TestResult **srunner_results(SRunner *sr)
{
    TestResult **all = cross_alloc(sizeof *all * (size_t)(sr->run + 1));
    for (int i = 0; i < sr->run; i++)
        all[i] = &sr->results[i];
    return all;
}

void srunner_free(SRunner *sr)
{
    free(sr); /* suites and cases live until exit, as tests define them once */
}

int tr_rtype(TestResult *tr)
{
    return tr->rtype;
}

const char *tr_tcname(TestResult *tr)
{
    return tr->tcname;
}

const char *tr_lfile(TestResult *tr)
{
    return tr->file;
}

int tr_lno(TestResult *tr)
{
    return tr->line;
}

const char *tr_msg(TestResult *tr)
{
    return tr->msg;
}
