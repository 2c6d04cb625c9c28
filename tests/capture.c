/* capture.c — see capture.h. */
#include "capture.h"

#include <string.h>

void capture(void *ud, const char *s, size_t len)
{
    Out *o = ud;
    if (o->n + len >= sizeof o->buf) len = sizeof o->buf - 1 - o->n;
    memcpy(o->buf + o->n, s, len);
    o->n += len;
    o->buf[o->n] = '\0';
}
