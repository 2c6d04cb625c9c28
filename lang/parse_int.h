/* parse_int.h — what the grammar's actions and the lexer share inside lang/; not for other folders. */
#ifndef TDL_LANG_PARSE_INT_H
#define TDL_LANG_PARSE_INT_H

#include "lang.h"
#include "grammar.h"

typedef struct NodeList { Node *head, *tail; } NodeList;

/* All state of one parse (Lemon's %extra_context). */
typedef struct LangParser {
    LangSource *src;
    LangArena *arena;
    LangLexer *lx;
    Node *body;
    bool failed;            /* an error is recorded in err */
    bool nomem;
    bool incomplete;        /* the error is "input ended early" */
    LangError err;
    LangToken prev, prev2;  /* the two tokens before the current one (for messages) */
    int fdepth;             /* f-strings this parse is inside (the expression of a field) */
} LangParser;

/* Lexer internals, exposed for the parser's messages. */
int lang_lexer_open_paren(LangLexer *lx, uint32_t *pos);   /* innermost open bracket, or 0 */
/* A lexer that starts at byte start of src, in the middle of a line (no indentation there): for
 * the expressions of f-string fields. */
LangLexer *lang_lexer_new_at(LangSource *src, uint32_t start);

void lang_parser_syntax_error(LangParser *p, int major, LangToken *tok);
void lang_parser_too_deep(LangParser *p);
void lang_parser_error(LangParser *p, LangErrorKind kind, uint32_t pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Builders: each returns a node in the arena (never NULL: on out-of-memory a static placeholder,
 * with p->nomem set). */
NodeList lang_list1(Node *n);
NodeList lang_list_add(NodeList l, Node *n);
NodeList lang_list_cat(NodeList a, NodeList b);
Node *lang_node(LangParser *p, NodeKind k, uint32_t pos);
Node *lang_node1(LangParser *p, NodeKind k, uint32_t pos, Node *a);
Node *lang_node2(LangParser *p, NodeKind k, uint32_t pos, Node *a, Node *b);
Node *lang_node3(LangParser *p, NodeKind k, uint32_t pos, Node *a, Node *b, Node *c);
Node *lang_seq(LangParser *p, NodeKind k, uint32_t pos, NodeList items);
Node *lang_name(LangParser *p, const LangToken *t);
Node *lang_dotted(LangParser *p, Node *left, const LangToken *t);
Node *lang_int(LangParser *p, const LangToken *t);
Node *lang_float(LangParser *p, const LangToken *t);
Node *lang_string(LangParser *p, Node *prev, const LangToken *t);
Node *lang_binop(LangParser *p, LangOp op, uint32_t pos, Node *x, Node *y);
Node *lang_unary(LangParser *p, LangOp op, uint32_t pos, Node *x);
Node *lang_compare(LangParser *p, LangOp op, uint32_t pos, Node *x, Node *y);
Node *lang_call(LangParser *p, uint32_t pos, Node *f, NodeList args);
Node *lang_kwarg(LangParser *p, const LangToken *name, Node *value);
Node *lang_attr(LangParser *p, uint32_t pos, Node *x, const LangToken *name);
Node *lang_slice(LangParser *p, uint32_t pos, Node *a, Node *b, Node *c);
Node *lang_assign(LangParser *p, Node *target, Node *value);
Node *lang_assign_chain(LangParser *p, Node *target, Node *assign);
Node *lang_del(LangParser *p, uint32_t pos, Node *target);
Node *lang_fstring(LangParser *p, Node *prev, const LangToken *t);
Node *lang_comp_for(LangParser *p, uint32_t pos, Node *target, Node *iter);
Node *lang_comp(LangParser *p, uint32_t pos, CompKind kind, Node *elem, Node *clauses);
Node *lang_augassign(LangParser *p, Node *target, const LangToken *op, Node *value);
Node *lang_for(LangParser *p, uint32_t pos, Node *target, Node *iter, Node *body, Node *orelse);
Node *lang_param(LangParser *p, const LangToken *name, Node *dflt);
/* *name, **name or a bare * (name NULL) in a parameter list. */
Node *lang_param_star(LangParser *p, uint32_t pos, const LangToken *name, ParamKind kind);
/* class name(bases): body */
Node *lang_class(LangParser *p, uint32_t pos, const LangToken *name, NodeList bases, Node *body);
/* @deco before the def or class c */
Node *lang_decorate(LangParser *p, uint32_t pos, Node *deco, Node *c);
/* name := value */
Node *lang_walrus(LangParser *p, const LangToken *name, uint32_t pos, Node *value);
/* An expression statement (an unparenthesized walrus cannot be one, as in Python). */
Node *lang_expr_stmt(LangParser *p, Node *e);
Node *lang_def(LangParser *p, uint32_t pos, const LangToken *name, NodeList params, Node *body);
Node *lang_lambda(LangParser *p, uint32_t pos, NodeList params, Node *body);
Node *lang_import(LangParser *p, uint32_t pos, Node *module, const LangToken *alias);
Node *lang_with_item(LangParser *p, Node *mgr, Node *target);
Node *lang_try(LangParser *p, uint32_t pos, Node *body, Node *handlers, Node *orelse, Node *fin);

/* Lemon's generated interface. */
void *LangParseAlloc(void *(*alloc)(size_t), LangParser *p);
void LangParseFree(void *parser, void (*release)(void *));
void LangParse(void *parser, int major, LangToken minor);

#endif
