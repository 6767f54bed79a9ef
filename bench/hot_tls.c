/*
** hot_tls.c: a __thread variable read from a shared library, the way a
** runtime built as a .so reaches thread-local state without rt_hot: with
** -fPIC the access is global-dynamic, a call to __tls_get_addr (Linux's
** counterpart of the _tlv_get_addr of seed 003). Built by mk/hot.mk only.
*/
__thread void *hot_tls_word;

void *hot_tls_read(void)
{
    return hot_tls_word;
}

void hot_tls_set(void *p)
{
    hot_tls_word = p;
}
