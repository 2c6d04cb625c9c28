/* lang.h — the front end of tdl: source text, tokens, the syntax tree and the parser.
 *
 * This is the one header other folders may include from lang/. lang/ knows nothing of values,
 * tensors or the interpreter: it turns text into a tree of Node and reports syntax errors with a
 * position. Positions are byte offsets into a LangSource; line and column are computed only when
 * someone asks (an error, a traceback).
 *
 * Ownership: a LangSource is reference counted (lang_source_retain/release). A parse produces a
 * LangUnit that owns the arena all nodes live in and holds a reference to its source; a LangUnit is
 * reference counted too, so function objects made from its nodes can keep it alive.
 */
#ifndef TDL_LANG_H
#define TDL_LANG_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/* ---- source text --------------------------------------------------------------------------- */

typedef struct LangSource {
    int refcnt;
    char *name;         /* file name or "<stdin>", "<string>" ... */
    char *text;         /* NUL-terminated copy of the text */
    size_t len;
    uint32_t *lines;    /* byte offset of each line start, computed on first use */
    uint32_t nlines;
} LangSource;

/* New source holding a copy of text[0..len). NULL on out-of-memory. */
LangSource *lang_source_new(const char *name, const char *text, size_t len);
LangSource *lang_source_retain(LangSource *src);
void lang_source_release(LangSource *src);
/* 1-based line and column (in characters) of byte offset pos. */
void lang_source_linecol(LangSource *src, uint32_t pos, int *line, int *col);
/* The text of 1-based line `line` (without its newline): *start and *len. false if no such line. */
bool lang_source_line(LangSource *src, int line, const char **start, size_t *len);
/* Appends "    <source line>\n    <spaces>^\n" for pos to buf (at most cap bytes, NUL-terminated).
 * Returns the number of bytes written. */
size_t lang_source_caret(LangSource *src, uint32_t pos, char *buf, size_t cap);

/* ---- arena ------------------------------------------------------------------------------- */

typedef struct LangArena LangArena;
LangArena *lang_arena_new(void);
void lang_arena_free(LangArena *a);
/* Zeroed memory that lives as long as the arena; NULL on out-of-memory. */
void *lang_arena_alloc(LangArena *a, size_t n);
char *lang_arena_strndup(LangArena *a, const char *s, size_t n);

/* ---- tokens ------------------------------------------------------------------------------ */

/* Token codes are TK_* from the Lemon-generated grammar.h; 0 is end of input. */
typedef struct LangToken {
    int kind;
    const char *z;      /* into the source text, never a copy */
    int n;
    uint32_t pos;       /* byte offset of z in the source */
} LangToken;

typedef enum LangStatus {
    LANG_OK = 0,
    LANG_ERROR,         /* a syntax or indentation error: see LangError */
    LANG_INCOMPLETE,    /* the input ended early: a REPL should read another line */
    LANG_NOMEM,
} LangStatus;

typedef enum LangErrorKind { LANG_SYNTAX_ERROR, LANG_INDENTATION_ERROR, LANG_TAB_ERROR } LangErrorKind;

typedef struct LangError {
    LangErrorKind kind;
    uint32_t pos;       /* where */
    char msg[256];
} LangError;

typedef struct LangLexer LangLexer;
/* A lexer over src; interactive=true means an open block at end of input is incomplete until a
 * blank line ends it (the REPL rule). NULL on out-of-memory. */
LangLexer *lang_lexer_new(LangSource *src, bool interactive);
void lang_lexer_free(LangLexer *lx);
/* Next token (INDENT/DEDENT/NEWLINE included). LANG_OK, or LANG_ERROR/LANG_INCOMPLETE with *err set. */
LangStatus lang_lexer_next(LangLexer *lx, LangToken *tok, LangError *err);
/* Printable name of a token code ("NAME", "'('", "INDENT", "end of input"). */
const char *lang_token_name(int kind);

/* ---- the syntax tree ------------------------------------------------------------------- */

typedef enum NodeKind {
    /* expressions */
    N_NAME, N_INT, N_FLOAT, N_STR, N_TRUE, N_FALSE, N_NONE, N_ELLIPSIS,
    N_TUPLE, N_LIST, N_BINOP, N_UNARY, N_NOT, N_AND, N_OR, N_COMPARE, N_CMP_ITEM,
    N_IFEXP, N_LAMBDA, N_CALL, N_KWARG, N_ATTR, N_SUBSCRIPT, N_SLICE,
    N_DICT, N_SET, N_PAIR, N_COMP, N_FSTRING, N_FIELD, N_STARRED,
    /* statements */
    N_EXPR_STMT, N_ASSIGN, N_AUGASSIGN, N_IF, N_WHILE, N_FOR, N_DEF, N_RETURN,
    N_BREAK, N_CONTINUE, N_PASS, N_ASSERT, N_RAISE, N_IMPORT, N_GLOBAL, N_NONLOCAL, N_PARAM,
    N_DEL, N_COMP_EMIT, N_TRY, N_EXCEPT, N_WITH, N_WITHITEM,
    N_NAMEDEXPR, N_CLASS, N_YIELD,
    N__COUNT
} NodeKind;

/* What an N_PARAM is: a plain parameter, *args, **kwargs, the bare * before keyword-only ones or
 * the / after positional-only ones (make_func takes those two out of the chain). */
typedef enum ParamKind { PARAM_PLAIN, PARAM_VARARGS, PARAM_VARKW, PARAM_BARE_STAR, PARAM_SLASH } ParamKind;

typedef enum CompKind { COMP_LIST, COMP_SET, COMP_DICT, COMP_GEN } CompKind;

/* Operators of N_BINOP, N_AUGASSIGN (op), N_UNARY and N_CMP_ITEM. */
typedef enum LangOp {
    OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FLOORDIV, OP_MOD, OP_POW, OP_MATMUL,
    OP_BITAND, OP_BITOR, OP_BITXOR, OP_LSHIFT, OP_RSHIFT,
    OP_NEG, OP_POS, OP_INVERT,
    OP_LT, OP_LE, OP_GT, OP_GE, OP_EQ, OP_NE, OP_IN, OP_NOTIN, OP_IS, OP_ISNOT,
    OP__COUNT
} LangOp;
extern const char *const lang_op_text[OP__COUNT];   /* "+", "not in", ... */

/* Where a name lives, filled in by the interpreter's resolver. */
typedef enum NameScope { SCOPE_UNRESOLVED, SCOPE_LOCAL, SCOPE_CELL, SCOPE_FREE, SCOPE_GLOBAL } NameScope;

typedef struct LangFunc LangFunc;
typedef struct Node Node;

/* One node shape for all kinds; the meaning of a, b, c, d per kind:
 *   N_NAME      str = name; scope/slot set by the resolver; builtin = fallback builtin index or -1
 *   N_INT/FLOAT ival/fval;  N_STR str/len (decoded bytes, NUL-terminated)
 *   N_TUPLE/N_LIST/N_SET  a = first item (items chained by next), count
 *   N_DICT      a = first N_PAIR (a = key, b = value), chained by next, count
 *   N_BINOP     op, a, b (pos = the operator);  N_UNARY op, a;  N_NOT a;  N_AND/N_OR a, b
 *   N_COMPARE   a = first operand, b = first N_CMP_ITEM (op, a = right operand), count items,
 *               last = the last item (so that a long chain is built in linear time)
 *   N_IFEXP     a = condition, b = value if true, c = value if false
 *   N_LAMBDA    func;  N_DEF func, a = the N_NAME the function is bound to, d = its decorators
 *               (chained by next, outermost first)
 *   N_CLASS     a = the N_NAME bound, b = the first base expression or N_KWARG (chained by next), d = the
 *               decorators, func = the body's scope (is_class; no parameters)
 *   N_CALL      a = callee, b = first argument (N_KWARG: str = keyword, a = value), count
 *   N_ATTR      a = object, str = attribute;  N_SUBSCRIPT a = object, b = index (N_TUPLE for a,b)
 *   N_SLICE     a, b, c = start, stop, step (each may be NULL)
 *   N_EXPR_STMT a;  N_ASSIGN a = first target (chained), count, b = value
 *   N_AUGASSIGN op, a = target, b = value;  N_RETURN a (may be NULL)
 *   N_IF        a = condition, b = body, c = else body (an N_IF for elif)
 *   N_WHILE     a = condition, b = body, c = else body
 *   N_FOR       a = target, b = iterable, c = body, d = else body
 *   N_ASSERT    a = condition, b = message (may be NULL)
 *   N_RAISE     a = the exception (NULL: re-raise the one being handled), b = its cause (`from`)
 *   N_TRY       a = body, b = first N_EXCEPT (a = class expression or NULL, b = body, c = the
 *               N_NAME of `as`, or NULL; chained by next), c = else body, d = finally body
 *   N_IMPORT    str = module name, a = the N_NAME it is bound to
 *   N_GLOBAL/N_NONLOCAL  a = first N_NAME
 *   N_PARAM     str = name, a = default (may be NULL), op = ParamKind
 *   N_NAMEDEXPR a = the N_NAME bound (x := v), b = the value
 *   N_YIELD     a = the value (may be NULL); op 1 for `yield from a`
 *   N_DEL       a = the target (a name, subscript, attribute, or an N_TUPLE/N_LIST of them)
 *   N_COMP      a comprehension or generator expression: op = CompKind, a = the first iterable
 *               (evaluated in the enclosing scope), func = its own scope, whose one parameter
 *               `.0` is that iterable's iterator and whose body is the clauses as nested
 *               statements: N_FOR (b = the iterable, `.0` for the first; c = the one inner
 *               statement), N_IF (b = the one inner statement), innermost N_COMP_EMIT
 *   N_FSTRING   a = first part (chained by next): N_STR text, or N_FIELD (a = the expression,
 *               b = the format spec, an N_FSTRING, or NULL; op = the conversion 'r' 's' 'a' or 0)
 *   N_WITH      a = first N_WITHITEM (a = the manager expression, b = the `as` target or NULL;
 *               chained by next), b = body
 *   N_STARRED   a = the value of `*a`: an item of a list, tuple or set display, a call's
 *               argument, or one target of an unpacking assignment
 *   N_COMP_EMIT a = the element (a dict comprehension's key), b = a dict comprehension's value
 * Statement bodies are chains of statements linked by next. */
struct Node {
    uint8_t kind;
    uint8_t op;
    uint8_t parens;     /* written inside parentheses (a comparison in parens does not chain) */
    uint8_t scope;      /* NameScope, for N_NAME */
    uint32_t pos;
    Node *next;
    Node *a, *b, *c, *d;
    int32_t count;
    int32_t slot;       /* N_NAME: the local, cell, free or global index */
    int32_t builtin;    /* N_NAME: index of a builtin to use when a global is unset, or -1 */
    int32_t height;     /* levels of the tree below and at this node (a leaf is 1): at most
                           LANG_MAX_DEPTH, which bounds the recursion of every tree walker */
    union {
        int64_t ival;
        double fval;
        struct { const char *str; size_t len; };
        Node *last;     /* N_COMPARE */
    };
    LangFunc *func;     /* N_DEF, N_LAMBDA */
};

/* A function's static shape. The parser fills the first part, the resolver the rest. */
struct LangFunc {
    const char *name;       /* "<lambda>" for lambdas */
    const char *qualname;   /* Python's __qualname__ ("outer.<locals>.inner", "A.m"): name until
                               the resolver sets it; what call errors name */
    Node *params;           /* chain of N_PARAM in slot order: positional ones, keyword-only
                               ones, then *args and **kwargs if there are */
    int nparams;            /* positional parameters */
    int nkwonly;            /* keyword-only parameters (after * or *args) */
    int nposonly;           /* the first nposonly positional parameters are positional-only (before /) */
    bool is_comp;           /* a comprehension's or generator expression's scope */
    bool is_class;          /* a class body's scope: its locals become the class's attributes */
    bool is_gen;            /* a generator function: its body has a yield (set by the resolver) */
    bool varargs, varkw;    /* *args (slot nparams + nkwonly), **kwargs (the slot after) */
    int ndefaults;          /* parameters with a default (the last positional ones and any
                               keyword-only ones), in chain order in FuncObj.defaults */
    Node *body;             /* statements; for a lambda, a single N_RETURN */
    uint32_t pos;
    /* resolver */
    bool resolved;
    int nslots;             /* locals, parameters first */
    uint8_t *slot_is_cell;  /* nslots flags: the local is captured by an inner function */
    const char **slot_names;
    int nfree;              /* free variables captured when the function is made */
    int32_t *free_from;     /* for each: >= 0 a cell slot of the enclosing function,
                               < 0 free index (-1 - k) of the enclosing function */
};

/* The deepest tree the parser makes. Left-associative chains (1+1+...+1, a and b and ...,
 * x[0][0]...) grow the tree without growing the parser's stack, so the builders count levels and
 * refuse a deeper tree with a SyntaxError at the node that crosses the limit; every walker of the
 * tree (the parser's checks, the resolver, the evaluator) may then recurse once per level. CPython
 * refuses expressions of about the same depth. */
#define LANG_MAX_DEPTH 3000

/* A parsed piece of text: its statements and the arena that holds them. */
typedef struct LangUnit {
    int refcnt;
    LangSource *src;
    LangArena *arena;
    Node *body;             /* chain of statements */
} LangUnit;

/* Parses the whole of src. On LANG_OK *out is a new unit (refcount 1). On LANG_ERROR /
 * LANG_INCOMPLETE err says what and where; *out is NULL. interactive: see lang_lexer_new. */
LangStatus lang_parse(LangSource *src, bool interactive, LangUnit **out, LangError *err);
LangUnit *lang_unit_retain(LangUnit *u);
void lang_unit_release(LangUnit *u);

/* Prints a tree in a compact s-expression form, for tests and --dump-ast. Returns bytes written. */
size_t lang_dump(const Node *n, char *buf, size_t cap);
const char *lang_node_kind_name(NodeKind k);

#endif
