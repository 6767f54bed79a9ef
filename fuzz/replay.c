/*
** replay.c: replays fuzzer inputs (the seed corpus, the regression inputs)
** through the interpreter, each in a child of its own so that a crash
** names its input. One results line an input: "pass <dir>/<file>" or
** "fail <dir>/<file> <why>", appended to $RT_RESULTS (else stdout).
**
**   replay DIR...   every regular file in each DIR, sorted by name
**
** Under the mutant driver (docs/mutants.md) it reads the hints a Check
** program reads (testmain.c), an input's "<dir>/<file>" standing for a
** case's name: RT_FAIL_FAST stops at the first input that fails (one
** failure is all a kill needs, and each input after it costs a fork and
** a run), RT_FIRST_CASES replays the inputs it names first, RT_ONLY_CASES
** only those (unless it names none of them).
*/
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "prop.h"

#define INPUT_MAX_BYTES (1u << 20)

static uint8_t buf[INPUT_MAX_BYTES];

static FILE *errs; /* the children's stderr */

/* Copies the last 4 KiB the failed child wrote on stderr to ours. */
static void show_tail(FILE *f)
{
    char tail[4096];
    long end;
    size_t n;

    fflush(f);
    fseek(f, 0, SEEK_END);
    end = ftell(f);
    fseek(f, end > (long)sizeof tail ? end - (long)sizeof tail : 0, SEEK_SET);
    n = fread(tail, 1, sizeof tail, f);
    fwrite(tail, 1, n, stderr);
}

/* Runs one input in a child; 0 if it passed, else 1 with why filled. */
static int replay_one(const char *path, struct prop_report *shared, char *why, size_t len)
{
    FILE *f = fopen(path, "rb");
    size_t n;
    int status;
    pid_t pid;

    if (f == NULL) {
        snprintf(why, len, "cannot open it");
        return 1;
    }
    n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    memset(shared, 0, sizeof *shared);
    fflush(NULL);
    if (ftruncate(fileno(errs), 0) != 0 || fseek(errs, 0, SEEK_SET) != 0) {
        snprintf(why, len, "cannot empty the stderr file");
        return 1;
    }
    pid = fork();
    if (pid < 0) {
        snprintf(why, len, "cannot fork");
        return 1;
    }
    if (pid == 0) {
        /* The panics an input asks for print their lines: kept in a file,
        ** shown only if the input fails. */
        if (dup2(fileno(errs), 2) < 0)
            _exit(3);
        _exit(prop_run_bytes(buf, n, shared) == 0 ? 0 : 1);
    }
    if (waitpid(pid, &status, 0) != pid) {
        snprintf(why, len, "cannot wait for its child");
        return 1;
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return 0;
    show_tail(errs);
    if (shared->failed)
        snprintf(why, len, "%s", shared->msg);
    else if (WIFSIGNALED(status))
        snprintf(why, len, "the runtime died of signal %d", WTERMSIG(status));
    else
        snprintf(why, len, "exited with status %d", WEXITSTATUS(status));
    return 1;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int regular(const struct dirent *d)
{
    return d->d_name[0] != '.' && strcmp(d->d_name, "README.md") != 0;
}

/* Whether name is one of the space-separated words of list. */
static int listed(const char *list, const char *name)
{
    size_t len = strlen(name);

    for (const char *p = list; p != NULL && (p = strstr(p, name)) != NULL; p += len)
        if ((p == list || p[-1] == ' ') && (p[len] == '\0' || p[len] == ' '))
            return 1;
    return 0;
}

/* Every input of the folders, "<dir>/<file>", sorted by name in each. */
static char **inputs_of(int ndirs, char **dirs, int *count)
{
    char **all = NULL;
    int total = 0;

    for (int a = 0; a < ndirs; a++) {
        struct dirent **names;
        int n = scandir(dirs[a], &names, regular, by_name);
        if (n < 0) {
            perror(dirs[a]);
            exit(2);
        }
        all = realloc(all, (size_t)(total + n + 1) * sizeof *all);
        if (all == NULL) {
            perror("realloc");
            exit(2);
        }
        for (int i = 0; i < n; i++) {
            size_t len = strlen(dirs[a]) + strlen(names[i]->d_name) + 2;
            all[total] = malloc(len);
            if (all[total] == NULL) {
                perror("malloc");
                exit(2);
            }
            snprintf(all[total++], len, "%s/%s", dirs[a], names[i]->d_name);
            free(names[i]);
        }
        free(names);
    }
    *count = total;
    return all;
}

/* RT_ONLY_CASES, as testmain.c reads it for a Check program: the mutant
** driver's witness runs and first tries replay only the inputs that killed
** a mutant last time; a list that names none of these inputs replays them
** all. */
static const char *only_inputs(char **inputs, int n)
{
    const char *only = getenv("RT_ONLY_CASES");

    for (int i = 0; only != NULL && i < n; i++)
        if (listed(only, inputs[i]))
            return only;
    return NULL;
}

int main(int argc, char **argv)
{
    const char *results = getenv("RT_RESULTS");
    FILE *out = results != NULL ? fopen(results, "a") : stdout;
    struct prop_report *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    const char *fail_fast = getenv("RT_FAIL_FAST");
    const char *first = getenv("RT_FIRST_CASES");
    int failed = 0, total = 0, n;

    errs = tmpfile();
    if (out == NULL || shared == MAP_FAILED || errs == NULL) {
        perror(out == NULL ? results : errs == NULL ? "tmpfile" : "mmap");
        return 2;
    }
    char **inputs = inputs_of(argc - 1, argv + 1, &n);
    const char *only = only_inputs(inputs, n);
    /* RT_FIRST_CASES (those that killed the function's mutants so far)
    ** first, then the others, as testmain.c orders a program's cases. */
    for (int pass = first != NULL ? 0 : 1; pass < 2; pass++) {
        for (int i = 0; i < n; i++) {
            char why[600];
            if (failed && fail_fast && *fail_fast)
                break;
            if ((first != NULL && listed(first, inputs[i])) != (pass == 0) ||
                (only != NULL && !listed(only, inputs[i])))
                continue;
            if (replay_one(inputs[i], shared, why, sizeof why) == 0) {
                fprintf(out, "pass %s\n", inputs[i]);
            } else {
                fprintf(out, "fail %s %s\n", inputs[i], why);
                fprintf(stderr, "fail %s %s\n", inputs[i], why);
                failed++;
            }
            total++;
        }
    }
    for (int i = 0; i < n; i++)
        free(inputs[i]);
    free(inputs);
    if (out != stdout)
        fclose(out);
    printf("fuzz replay: %d inputs, %d failed\n", total, failed);
    return failed == 0 ? 0 : 1;
}
