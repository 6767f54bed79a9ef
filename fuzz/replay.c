/*
** replay.c: replays fuzzer inputs (the seed corpus, the regression inputs)
** through the interpreter, each in a child of its own so that a crash
** names its input. One results line an input: "pass <dir>/<file>" or
** "fail <dir>/<file> <why>", appended to $RT_RESULTS (else stdout).
**
**   replay DIR...   every regular file in each DIR, sorted by name
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

int main(int argc, char **argv)
{
    const char *results = getenv("RT_RESULTS");
    FILE *out = results != NULL ? fopen(results, "a") : stdout;
    struct prop_report *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    int failed = 0, total = 0;

    errs = tmpfile();
    if (out == NULL || shared == MAP_FAILED || errs == NULL) {
        perror(out == NULL ? results : errs == NULL ? "tmpfile" : "mmap");
        return 2;
    }
    for (int a = 1; a < argc; a++) {
        struct dirent **names;
        int n = scandir(argv[a], &names, regular, by_name);
        if (n < 0) {
            perror(argv[a]);
            return 2;
        }
        for (int i = 0; i < n; i++) {
            char path[4096], why[600];
            snprintf(path, sizeof path, "%s/%s", argv[a], names[i]->d_name);
            if (replay_one(path, shared, why, sizeof why) == 0) {
                fprintf(out, "pass %s\n", path);
            } else {
                fprintf(out, "fail %s %s\n", path, why);
                fprintf(stderr, "fail %s %s\n", path, why);
                failed++;
            }
            total++;
            free(names[i]);
        }
        free(names);
    }
    if (out != stdout)
        fclose(out);
    printf("fuzz replay: %d inputs, %d failed\n", total, failed);
    return failed == 0 ? 0 : 1;
}
