/* strbuf.c: a growable string buffer (strbuf.h). The capacity at least
** doubles on each growth, so n appends cost O(n) copies in all. */
#include "strbuf.h"

#include <stdlib.h>
#include <string.h>

#define SB_MIN 16

void sb_init(struct strbuf *sb)
{
    sb->data = NULL;
    sb->len = 0;
    sb->cap = 0;
}

void sb_free(struct strbuf *sb)
{
    free(sb->data);
    sb_init(sb);
}

int sb_reserve(struct strbuf *sb, size_t more)
{
    if (more > (size_t)-1 - sb->len - 1)
        return -1;
    size_t need = sb->len + more + 1;
    if (need <= sb->cap)
        return 0;
    size_t cap = sb->cap < SB_MIN ? SB_MIN : sb->cap;
    while (cap < need)
        cap = cap > (size_t)-1 / 2 ? need : cap * 2;
    char *data = realloc(sb->data, cap);
    if (data == NULL)
        return -1;
    sb->data = data;
    sb->cap = cap;
    return 0;
}

int sb_append(struct strbuf *sb, const char *bytes, size_t n)
{
    if (sb_reserve(sb, n) != 0)
        return -1;
    memcpy(sb->data + sb->len, bytes, n);
    sb->len += n;
    sb->data[sb->len] = '\0';
    return 0;
}

int sb_puts(struct strbuf *sb, const char *s)
{
    return sb_append(sb, s, strlen(s));
}

int sb_putc(struct strbuf *sb, char c)
{
    return sb_append(sb, &c, 1);
}

void sb_truncate(struct strbuf *sb, size_t n)
{
    if (n >= sb->len)
        return;
    sb->len = n;
    sb->data[n] = '\0';
}

long sb_find(const struct strbuf *sb, const char *needle, size_t from)
{
    size_t n = strlen(needle);
    if (from > sb->len || n > sb->len - from)
        return -1;
    for (size_t i = from; i + n <= sb->len; i++)
        if (memcmp(sb->data + i, needle, n) == 0)
            return (long)i;
    return -1;
}

const char *sb_str(const struct strbuf *sb)
{
    return sb->data != NULL ? sb->data : "";
}
