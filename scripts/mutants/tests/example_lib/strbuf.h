/* strbuf.h: a growable string buffer, always NUL-terminated. */
#ifndef STRBUF_H
#define STRBUF_H

#include <stddef.h>

struct strbuf {
    char *data;     /* len bytes, then a NUL; NULL until the first append */
    size_t len;
    size_t cap;     /* bytes data can hold, the NUL included */
};

void sb_init(struct strbuf *sb);
void sb_free(struct strbuf *sb);
/* 0 on success, -1 when memory runs out (the buffer is left as it was) */
int sb_reserve(struct strbuf *sb, size_t more);
int sb_append(struct strbuf *sb, const char *bytes, size_t n);
int sb_puts(struct strbuf *sb, const char *s);
int sb_putc(struct strbuf *sb, char c);
/* keeps the first n bytes (n past the end: no change) */
void sb_truncate(struct strbuf *sb, size_t n);
/* the offset of the first occurrence of needle at or after from, or -1 */
long sb_find(const struct strbuf *sb, const char *needle, size_t from);
/* the text, never NULL ("" for an empty buffer) */
const char *sb_str(const struct strbuf *sb);

#endif
