/* test_strbuf.c: strbuf's tests. Exits 1 at the first check that fails,
** naming it. */
#include "strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                          \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "test_strbuf.c:%d: %s failed\n", __LINE__, #cond); \
            exit(1);                                                         \
        }                                                                    \
    } while (0)

static void empty(void)
{
    struct strbuf sb;
    sb_init(&sb);
    CHECK(sb.len == 0 && sb.cap == 0 && sb.data == NULL);
    CHECK(strcmp(sb_str(&sb), "") == 0);
    CHECK(sb_find(&sb, "", 0) == 0);
    CHECK(sb_find(&sb, "a", 0) == -1);
    sb_free(&sb);
    CHECK(sb.data == NULL && sb.len == 0);
}

static void appends(void)
{
    struct strbuf sb;
    sb_init(&sb);
    CHECK(sb_puts(&sb, "hello") == 0);
    CHECK(sb_putc(&sb, ',') == 0);
    CHECK(sb_append(&sb, " world!!", 7) == 0);
    CHECK(sb.len == 13 && strcmp(sb_str(&sb), "hello, world!") == 0);
    CHECK(sb.cap == 16);                    /* the first growth takes SB_MIN */
    CHECK(sb_puts(&sb, "abc") == 0);        /* 16 bytes and the NUL: doubles */
    CHECK(sb.len == 16 && sb.cap == 32);
    CHECK(sb_append(&sb, "", 0) == 0 && sb.len == 16);
    sb_free(&sb);
}

static void growth(void)
{
    struct strbuf sb;
    sb_init(&sb);
    for (int i = 0; i < 1000; i++)
        CHECK(sb_putc(&sb, (char)('a' + i % 26)) == 0);
    CHECK(sb.len == 1000 && sb.cap == 1024 && sb.data[1000] == '\0');
    CHECK(sb.data[999] == 'a' + 999 % 26);
    CHECK(sb_reserve(&sb, 23) == 0 && sb.cap == 1024);   /* 1000 + 23 + NUL fits */
    CHECK(sb_reserve(&sb, 24) == 0 && sb.cap == 2048);
    CHECK(sb_reserve(&sb, SIZE_MAX) == -1 && sb.len == 1000);
    sb_free(&sb);
}

static void truncate_and_find(void)
{
    struct strbuf sb;
    sb_init(&sb);
    CHECK(sb_puts(&sb, "abcabcab") == 0);
    CHECK(sb_find(&sb, "abc", 0) == 0);
    CHECK(sb_find(&sb, "abc", 1) == 3);
    CHECK(sb_find(&sb, "abc", 4) == -1);
    CHECK(sb_find(&sb, "ab", 6) == 6);
    CHECK(sb_find(&sb, "b", 8) == -1);
    CHECK(sb_find(&sb, "", 8) == 8);
    CHECK(sb_find(&sb, "", 9) == -1);
    sb_truncate(&sb, 20);
    CHECK(sb.len == 8);
    sb_truncate(&sb, 8);
    CHECK(sb.len == 8 && strcmp(sb_str(&sb), "abcabcab") == 0);
    sb_truncate(&sb, 4);
    CHECK(sb.len == 4 && strcmp(sb_str(&sb), "abca") == 0);
    CHECK(sb_find(&sb, "ab", 1) == -1);
    sb_free(&sb);
}

int main(void)
{
    empty();
    appends();
    growth();
    truncate_and_find();
    printf("test_strbuf: all checks passed\n");
    return 0;
}
