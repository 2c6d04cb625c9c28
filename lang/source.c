/* source.c — source text with lazily computed line starts, and the arena the syntax tree lives in.
 * Depends on nothing outside lang/. */
#include "lang.h"
#include "mem.h"

#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <stddef.h>

LangSource *lang_source_new(const char *name, const char *text, size_t len)
{
    LangSource *s = mem_calloc(1, sizeof *s);
    if (!s) return NULL;
    s->refcnt = 1;
    s->name = mem_strdup(name ? name : "<string>");
    s->text = mem_malloc(len + 1);
    if (!s->name || !s->text) {
        mem_free(s->name);
        mem_free(s->text);
        mem_free(s);
        return NULL;
    }
    memcpy(s->text, text, len);
    s->text[len] = '\0';
    s->len = len;
    return s;
}

LangSource *lang_source_retain(LangSource *src)
{
    if (src) src->refcnt++;
    return src;
}

void lang_source_release(LangSource *src)
{
    if (!src || --src->refcnt > 0) return;
    mem_free(src->name);
    mem_free(src->text);
    mem_free(src->lines);
    mem_free(src);
}

/* A line ends at \n, \r\n or a lone \r, as in the lexer. text[len] is the NUL, so i + 1 is safe. */
static bool line_end(const LangSource *s, size_t i)
{
    return s->text[i] == '\n' || (s->text[i] == '\r' && s->text[i + 1] != '\n');
}

static bool compute_lines(LangSource *s)
{
    if (s->lines) return true;
    uint32_t n = 1;
    for (size_t i = 0; i < s->len; i++) n += line_end(s, i);
    s->lines = mem_malloc(n * sizeof *s->lines);
    if (!s->lines) return false;
    s->lines[0] = 0;
    uint32_t k = 1;
    for (size_t i = 0; i < s->len; i++)
        if (line_end(s, i)) s->lines[k++] = (uint32_t)(i + 1);
    s->nlines = n;
    return true;
}

/* Byte offset of the start of the line holding pos (pos <= len), and its 0-based number: from the
 * line table, or by scanning the text when there is no memory for the table (a position is never
 * wrong for want of memory). */
static uint32_t line_start(LangSource *s, uint32_t pos, uint32_t *lineno)
{
    if (!compute_lines(s)) {
        uint32_t start = 0, n = 0;
        for (uint32_t i = 0; i < pos; i++)
            if (line_end(s, i)) start = i + 1, n++;
        *lineno = n;
        return start;
    }
    uint32_t lo = 0, hi = s->nlines - 1;
    while (lo < hi) {
        uint32_t mid = (lo + hi + 1) / 2;
        if (s->lines[mid] <= pos) lo = mid; else hi = mid - 1;
    }
    *lineno = lo;
    return s->lines[lo];
}

void lang_source_linecol(LangSource *s, uint32_t pos, int *line, int *col)
{
    *line = 1;
    *col = 1;
    if (!s) return;
    if (pos > s->len) pos = (uint32_t)s->len;
    uint32_t lo;
    uint32_t start = line_start(s, pos, &lo);
    *line = (int)lo + 1;
    int c = 1;
    for (uint32_t i = start; i < pos; i++)
        if (((unsigned char)s->text[i] & 0xC0) != 0x80) c++;   /* count characters, not bytes */
    *col = c;
}

bool lang_source_line(LangSource *s, int line, const char **start, size_t *len)
{
    if (!s || line < 1) return false;
    uint32_t b;
    if (compute_lines(s)) {
        if ((uint32_t)line > s->nlines) return false;
        b = s->lines[line - 1];
    } else {
        /* No memory for the table: the line's start by scanning. */
        int n = 1;
        for (b = 0; n < line && b < s->len; b++)
            if (line_end(s, b)) n++;
        if (n < line) return false;
    }
    uint32_t e = b;
    while (e < s->len && s->text[e] != '\n' && s->text[e] != '\r') e++;
    *start = s->text + b;
    *len = e - b;
    return true;
}

size_t lang_source_caret(LangSource *s, uint32_t pos, char *buf, size_t cap)
{
    if (cap == 0) return 0;
    buf[0] = '\0';
    int line, col;
    const char *text;
    size_t len;
    lang_source_linecol(s, pos, &line, &col);
    if (!lang_source_line(s, line, &text, &len)) return 0;
    /* Drop leading white space as Python's traceback does, and keep the caret aligned. */
    size_t skip = 0;
    while (skip < len && (text[skip] == ' ' || text[skip] == '\t')) skip++;
    if (skip == len) return 0;
    size_t w = 0;
    int r = snprintf(buf, cap, "    %.*s\n    ", (int)(len - skip), text + skip);
    if (r < 0 || (size_t)r >= cap) { buf[cap - 1] = '\0'; return cap - 1; }
    w = (size_t)r;
    /* The caret goes under character col; leading white space was dropped. */
    int ccol = 1;
    for (size_t i = 0; i < skip; i++) ccol++;
    int spaces = col - ccol;
    if (spaces < 0) spaces = 0;
    for (int i = 0; i < spaces && w + 1 < cap; i++) buf[w++] = ' ';
    if (w + 2 < cap) { buf[w++] = '^'; buf[w++] = '\n'; }
    buf[w] = '\0';
    return w;
}

/* ---- arena: a chain of blocks; nodes are never freed one by one ---- */

typedef struct Block { struct Block *next; size_t used, cap; max_align_t data[]; } Block;
struct LangArena { Block *head; };

LangArena *lang_arena_new(void) { return mem_calloc(1, sizeof(LangArena)); }

void lang_arena_free(LangArena *a)
{
    if (!a) return;
    for (Block *b = a->head, *n; b; b = n) { n = b->next; mem_free(b); }
    mem_free(a);
}

void *lang_arena_alloc(LangArena *a, size_t n)
{
    n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
    Block *b = a->head;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > 16384 ? n : 16384;
        b = mem_malloc(sizeof *b + cap);
        if (!b) return NULL;
        b->used = 0;
        b->cap = cap;
        b->next = a->head;
        a->head = b;
    }
    void *p = (char *)b->data + b->used;
    b->used += n;
    memset(p, 0, n);
    return p;
}

char *lang_arena_strndup(LangArena *a, const char *s, size_t n)
{
    char *p = lang_arena_alloc(a, n + 1);
    if (!p) return NULL;
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}
