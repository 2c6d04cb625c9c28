/* grammar.y — the tdl grammar (Lemon). Generated grammar.c/grammar.h are build products.
 *
 * Actions are one or two lines that call the builders of build.c; nodes live in the parse's arena,
 * so no action can leak. A builder that runs out of memory records it in the parser and returns a
 * placeholder; the parse then fails with LANG_NOMEM. Precedence follows Python's. */

%name LangParse
%token_prefix TK_
%token_type {LangToken}
%default_type {Node *}
%extra_context {LangParser *p}
%stack_size 400
%start_symbol file

%include {
#include "parse_int.h"
#include <assert.h>
}

%syntax_error { lang_parser_syntax_error(p, yymajor, &yyminor); }
%stack_overflow { lang_parser_too_deep(p); }
%parse_failure { if (!p->failed) lang_parser_syntax_error(p, 0, NULL); }

/* Token order fixes the codes; the lexer uses TK_* from grammar.h. */
%token NEWLINE INDENT DEDENT NAME INT FLOAT STRING.
%token DEF RETURN IF ELIF ELSE FOR IN WHILE BREAK CONTINUE PASS ASSERT IMPORT AS GLOBAL NONLOCAL
       LAMBDA TRUE FALSE NONE RAISE.
%token LPAREN RPAREN LBRACKET RBRACKET COMMA COLON SEMI DOT ELLIPSIS ASSIGN AUGASSIGN.
%token DEL LBRACE RBRACE FSTRING TRY EXCEPT FINALLY FROM WITH.
%token WALRUS CLASS YIELD.

/* Lowest first. */
%right WALRUS.
%right LAMBDA.
%right IF ELSE.
%left OR.
%left AND.
%right NOT.
%left IN NOTIN IS ISNOT LT LE GT GE EQ NE.
%left PIPE.
%left CARET.
%left AMP.
%left LSHIFT RSHIFT.
%left PLUS MINUS.
%left STAR SLASH DSLASH PERCENT AT.
%right UNARY TILDE.
%right POW.

/* ---- statements ---- */

%type stmts {NodeList}
%type stmts1 {NodeList}
%type stmt {NodeList}
%type simple {NodeList}
%type block {NodeList}

file ::= stmts(S).                       { p->body = S.head; }

stmts(A) ::= .                           { A.head = A.tail = NULL; }
stmts(A) ::= stmts(L) stmt(S).           { A = lang_list_cat(L, S); }
stmts1(A) ::= stmt(S).                   { A = S; }
stmts1(A) ::= stmts1(L) stmt(S).         { A = lang_list_cat(L, S); }

stmt(A) ::= simple(S) NEWLINE.           { A = S; }
stmt(A) ::= simple(S) SEMI NEWLINE.      { A = S; }
stmt(A) ::= compound(C).                 { A = lang_list1(C); }

simple(A) ::= small(S).                  { A = lang_list1(S); }
simple(A) ::= simple(L) SEMI small(S).   { A = lang_list_add(L, S); }

block(A) ::= simple(S) NEWLINE.          { A = S; }
block(A) ::= simple(S) SEMI NEWLINE.     { A = S; }
block(A) ::= NEWLINE INDENT stmts1(S) DEDENT. { A = S; }

small(A) ::= testlist(E).                { A = lang_expr_stmt(p, E); }
small(A) ::= assign(S).                  { A = S; }
small(A) ::= testlist(T) AUGASSIGN(O) testlist(V). { A = lang_augassign(p, T, &O, V); }
/* yield is an expression statement, the value of an assignment, or parenthesized (as Python) */
small(A) ::= yieldexpr(E).               { A = lang_node1(p, N_EXPR_STMT, E->pos, E); }
small(A) ::= testlist(T) AUGASSIGN(O) yieldexpr(V). { A = lang_augassign(p, T, &O, V); }
yieldexpr(A) ::= YIELD(K).               { A = lang_node(p, N_YIELD, K.pos); }
yieldexpr(A) ::= YIELD(K) testlist(E).   { A = lang_node1(p, N_YIELD, K.pos, E); }
yieldexpr(A) ::= YIELD(K) FROM expr(E).  { A = lang_node1(p, N_YIELD, K.pos, E); A->op = 1; }
small(A) ::= PASS(K).                    { A = lang_node(p, N_PASS, K.pos); }
small(A) ::= BREAK(K).                   { A = lang_node(p, N_BREAK, K.pos); }
small(A) ::= CONTINUE(K).                { A = lang_node(p, N_CONTINUE, K.pos); }
small(A) ::= RETURN(K).                  { A = lang_node(p, N_RETURN, K.pos); }
small(A) ::= RETURN(K) testlist(E).      { A = lang_node1(p, N_RETURN, K.pos, E); }
small(A) ::= ASSERT(K) expr(C).          { A = lang_node1(p, N_ASSERT, K.pos, C); }
small(A) ::= ASSERT(K) expr(C) COMMA expr(M). { A = lang_node2(p, N_ASSERT, K.pos, C, M); }
small(A) ::= RAISE(K).                   { A = lang_node(p, N_RAISE, K.pos); }
small(A) ::= RAISE(K) expr(E).           { A = lang_node1(p, N_RAISE, K.pos, E); }
small(A) ::= RAISE(K) expr(E) FROM expr(C). { A = lang_node2(p, N_RAISE, K.pos, E, C); }
small(A) ::= IMPORT(K) dotted(M).        { A = lang_import(p, K.pos, M, NULL); }
small(A) ::= IMPORT(K) dotted(M) AS NAME(N). { A = lang_import(p, K.pos, M, &N); }
small(A) ::= DEL(K) testlist(T).         { A = lang_del(p, K.pos, T); }
small(A) ::= GLOBAL(K) names(L).         { A = lang_node1(p, N_GLOBAL, K.pos, L.head); }
small(A) ::= NONLOCAL(K) names(L).       { A = lang_node1(p, N_NONLOCAL, K.pos, L.head); }

%type dotted {Node *}
dotted(A) ::= NAME(N).                   { A = lang_name(p, &N); }
dotted(A) ::= dotted(L) DOT NAME(N).     { A = lang_dotted(p, L, &N); }

%type names {NodeList}
names(A) ::= NAME(N).                    { A = lang_list1(lang_name(p, &N)); }
names(A) ::= names(L) COMMA NAME(N).     { A = lang_list_add(L, lang_name(p, &N)); }

/* a = b = value: targets are checked by the builder. */
assign(A) ::= testlist(T) ASSIGN testlist(V).  { A = lang_assign(p, T, V); }
assign(A) ::= testlist(T) ASSIGN assign(R).    { A = lang_assign_chain(p, T, R); }
assign(A) ::= testlist(T) ASSIGN yieldexpr(V). { A = lang_assign(p, T, V); }

compound(A) ::= IF(K) expr(C) COLON block(B) elifs(E). { A = lang_node3(p, N_IF, K.pos, C, B.head, E); }
%type elifs {Node *}
elifs(A) ::= .                                          { A = NULL; }
elifs(A) ::= ELSE COLON block(B).                       { A = B.head; }
elifs(A) ::= ELIF(K) expr(C) COLON block(B) elifs(E).   { A = lang_node3(p, N_IF, K.pos, C, B.head, E); }

/* try: a = body, b = the handlers (N_EXCEPT: a = the class expression or NULL, b = body,
 * c = the N_NAME bound by `as`), c = else, d = finally. */
compound(A) ::= TRY(K) COLON block(B) handlers(H).      { A = lang_try(p, K.pos, B.head, H.head, NULL, NULL); }
compound(A) ::= TRY(K) COLON block(B) handlers(H) ELSE COLON block(E).
                                                        { A = lang_try(p, K.pos, B.head, H.head, E.head, NULL); }
compound(A) ::= TRY(K) COLON block(B) handlers(H) FINALLY COLON block(F).
                                                        { A = lang_try(p, K.pos, B.head, H.head, NULL, F.head); }
compound(A) ::= TRY(K) COLON block(B) handlers(H) ELSE COLON block(E) FINALLY COLON block(F).
                                                        { A = lang_try(p, K.pos, B.head, H.head, E.head, F.head); }
compound(A) ::= TRY(K) COLON block(B) FINALLY COLON block(F).
                                                        { A = lang_try(p, K.pos, B.head, NULL, NULL, F.head); }
%type handlers {NodeList}
handlers(A) ::= handler(X).              { A = lang_list1(X); }
handlers(A) ::= handlers(L) handler(X).  { A = lang_list_add(L, X); }
handler(A) ::= EXCEPT(K) COLON block(B). { A = lang_node2(p, N_EXCEPT, K.pos, NULL, B.head); }
handler(A) ::= EXCEPT(K) expr(T) COLON block(B). { A = lang_node2(p, N_EXCEPT, K.pos, T, B.head); }
handler(A) ::= EXCEPT(K) expr(T) AS NAME(N) COLON block(B).
                                         { A = lang_node3(p, N_EXCEPT, K.pos, T, B.head, lang_name(p, &N)); }

/* with a as x, b: body — a = the first N_WITHITEM (a = manager, b = target or NULL), b = body */
compound(A) ::= WITH(K) withitems(L) COLON block(B).   { A = lang_node2(p, N_WITH, K.pos, L.head, B.head); }
%type withitems {NodeList}
withitems(A) ::= withitem(X).            { A = lang_list1(X); }
withitems(A) ::= withitems(L) COMMA withitem(X). { A = lang_list_add(L, X); }
withitem(A) ::= expr(E).                 { A = lang_node1(p, N_WITHITEM, E->pos, E); }
withitem(A) ::= expr(E) AS primary(T).   { A = lang_with_item(p, E, T); }

compound(A) ::= WHILE(K) expr(C) COLON block(B).        { A = lang_node3(p, N_WHILE, K.pos, C, B.head, NULL); }
compound(A) ::= WHILE(K) expr(C) COLON block(B) ELSE COLON block(E).
                                                        { A = lang_node3(p, N_WHILE, K.pos, C, B.head, E.head); }
compound(A) ::= FOR(K) targets(T) IN testlist(I) COLON block(B).
                                                        { A = lang_for(p, K.pos, T, I, B.head, NULL); }
compound(A) ::= FOR(K) targets(T) IN testlist(I) COLON block(B) ELSE COLON block(E).
                                                        { A = lang_for(p, K.pos, T, I, B.head, E.head); }
compound(A) ::= DEF(K) NAME(N) LPAREN params(P) RPAREN COLON block(B).
                                                        { A = lang_def(p, K.pos, &N, P, B.head); }
/* class C(bases): body — the bases are a call's arguments (keywords are refused by the builder) */
compound(A) ::= CLASS(K) NAME(N) COLON block(B).       { NodeList e = {0}; A = lang_class(p, K.pos, &N, e, B.head); }
compound(A) ::= CLASS(K) NAME(N) LPAREN args(L) RPAREN COLON block(B).
                                                        { A = lang_class(p, K.pos, &N, L, B.head); }
/* @decorator on its own line before a def or class (the builder checks which) */
compound(A) ::= AT(K) expr(E) NEWLINE compound(C).     { A = lang_decorate(p, K.pos, E, C); }

%type params {NodeList}
%type params1 {NodeList}
params(A) ::= .                          { A.head = A.tail = NULL; }
params(A) ::= params1(L).                { A = L; }
params(A) ::= params1(L) COMMA.          { A = L; }
params1(A) ::= param(P).                 { A = lang_list1(P); }
params1(A) ::= params1(L) COMMA param(P). { A = lang_list_add(L, P); }
param(A) ::= NAME(N).                    { A = lang_param(p, &N, NULL); }
param(A) ::= NAME(N) ASSIGN expr(D).     { A = lang_param(p, &N, D); }
/* *args, a bare * (keyword-only parameters follow) and **kwargs: make_func orders and checks them */
param(A) ::= STAR(O) NAME(N).            { A = lang_param_star(p, O.pos, &N, PARAM_VARARGS); }
param(A) ::= STAR(O).                    { A = lang_param_star(p, O.pos, NULL, PARAM_BARE_STAR); }
param(A) ::= POW(O) NAME(N).             { A = lang_param_star(p, O.pos, &N, PARAM_VARKW); }
param(A) ::= SLASH(O).                   { A = lang_param_star(p, O.pos, NULL, PARAM_SLASH); }

/* for-targets are primaries, so `for x in y` does not read `x in y` as a comparison. */
targets(A) ::= primary(E).               { A = E; }
targets(A) ::= primary(E) COMMA.         { A = lang_seq(p, N_TUPLE, E->pos, lang_list1(E)); }
targets(A) ::= tseq(L).                  { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
targets(A) ::= tseq(L) COMMA.            { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
%type tseq {NodeList}
tseq(A) ::= primary(X) COMMA primary(Y). { A = lang_list_add(lang_list1(X), Y); }
tseq(A) ::= tseq(L) COMMA primary(Y).    { A = lang_list_add(L, Y); }

/* ---- expression lists ---- */

testlist(A) ::= sexpr(E).                { A = E; }
testlist(A) ::= sexpr(E) COMMA.          { A = lang_seq(p, N_TUPLE, E->pos, lang_list1(E)); }
testlist(A) ::= eseq(L).                 { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
testlist(A) ::= eseq(L) COMMA.           { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
%type eseq {NodeList}
eseq(A) ::= sexpr(X) COMMA sexpr(Y).     { A = lang_list_add(lang_list1(X), Y); }
eseq(A) ::= eseq(L) COMMA sexpr(Y).      { A = lang_list_add(L, Y); }
/* *x where Python allows it: an item of a display or target list (the builders refuse it where
 * it cannot unpack, as in `x = *a`) */
sexpr(A) ::= expr(E).                    { A = E; }
sexpr(A) ::= STAR(O) expr(X).            { A = lang_node1(p, N_STARRED, O.pos, X); }

/* ---- expressions ---- */

expr(A) ::= primary(E).                  { A = E; }
expr(A) ::= expr(X) PLUS(O) expr(Y).     { A = lang_binop(p, OP_ADD, O.pos, X, Y); }
expr(A) ::= expr(X) MINUS(O) expr(Y).    { A = lang_binop(p, OP_SUB, O.pos, X, Y); }
expr(A) ::= expr(X) STAR(O) expr(Y).     { A = lang_binop(p, OP_MUL, O.pos, X, Y); }
expr(A) ::= expr(X) SLASH(O) expr(Y).    { A = lang_binop(p, OP_DIV, O.pos, X, Y); }
expr(A) ::= expr(X) DSLASH(O) expr(Y).   { A = lang_binop(p, OP_FLOORDIV, O.pos, X, Y); }
expr(A) ::= expr(X) PERCENT(O) expr(Y).  { A = lang_binop(p, OP_MOD, O.pos, X, Y); }
expr(A) ::= expr(X) AT(O) expr(Y).       { A = lang_binop(p, OP_MATMUL, O.pos, X, Y); }
expr(A) ::= expr(X) POW(O) expr(Y).      { A = lang_binop(p, OP_POW, O.pos, X, Y); }
expr(A) ::= expr(X) AMP(O) expr(Y).      { A = lang_binop(p, OP_BITAND, O.pos, X, Y); }
expr(A) ::= expr(X) PIPE(O) expr(Y).     { A = lang_binop(p, OP_BITOR, O.pos, X, Y); }
expr(A) ::= expr(X) CARET(O) expr(Y).    { A = lang_binop(p, OP_BITXOR, O.pos, X, Y); }
expr(A) ::= expr(X) LSHIFT(O) expr(Y).   { A = lang_binop(p, OP_LSHIFT, O.pos, X, Y); }
expr(A) ::= expr(X) RSHIFT(O) expr(Y).   { A = lang_binop(p, OP_RSHIFT, O.pos, X, Y); }
expr(A) ::= MINUS(O) expr(X). [UNARY]    { A = lang_unary(p, OP_NEG, O.pos, X); }
expr(A) ::= PLUS(O) expr(X). [UNARY]     { A = lang_unary(p, OP_POS, O.pos, X); }
expr(A) ::= TILDE(O) expr(X).            { A = lang_unary(p, OP_INVERT, O.pos, X); }
expr(A) ::= NOT(O) expr(X).              { A = lang_node1(p, N_NOT, O.pos, X); }
expr(A) ::= expr(X) AND(O) expr(Y).      { A = lang_node2(p, N_AND, O.pos, X, Y); }
expr(A) ::= expr(X) OR(O) expr(Y).       { A = lang_node2(p, N_OR, O.pos, X, Y); }
expr(A) ::= expr(X) LT(O) expr(Y).       { A = lang_compare(p, OP_LT, O.pos, X, Y); }
expr(A) ::= expr(X) LE(O) expr(Y).       { A = lang_compare(p, OP_LE, O.pos, X, Y); }
expr(A) ::= expr(X) GT(O) expr(Y).       { A = lang_compare(p, OP_GT, O.pos, X, Y); }
expr(A) ::= expr(X) GE(O) expr(Y).       { A = lang_compare(p, OP_GE, O.pos, X, Y); }
expr(A) ::= expr(X) EQ(O) expr(Y).       { A = lang_compare(p, OP_EQ, O.pos, X, Y); }
expr(A) ::= expr(X) NE(O) expr(Y).       { A = lang_compare(p, OP_NE, O.pos, X, Y); }
expr(A) ::= expr(X) IN(O) expr(Y).       { A = lang_compare(p, OP_IN, O.pos, X, Y); }
expr(A) ::= expr(X) NOTIN(O) expr(Y).    { A = lang_compare(p, OP_NOTIN, O.pos, X, Y); }
expr(A) ::= expr(X) IS(O) expr(Y).       { A = lang_compare(p, OP_IS, O.pos, X, Y); }
expr(A) ::= expr(X) ISNOT(O) expr(Y).    { A = lang_compare(p, OP_ISNOT, O.pos, X, Y); }
expr(A) ::= expr(X) IF(O) expr(C) ELSE expr(Y). { A = lang_node3(p, N_IFEXP, O.pos, C, X, Y); }
expr(A) ::= LAMBDA(K) params(P) COLON expr(E). [LAMBDA] { A = lang_lambda(p, K.pos, P, E); }
expr(A) ::= NAME(N) WALRUS(O) expr(E). [WALRUS] { A = lang_walrus(p, &N, O.pos, E); }

primary(A) ::= atom(E).                  { A = E; }
primary(A) ::= primary(F) LPAREN(O) args(L) RPAREN. { A = lang_call(p, O.pos, F, L); }
primary(A) ::= primary(X) LBRACKET(O) subscripts(I) RBRACKET. { A = lang_node2(p, N_SUBSCRIPT, O.pos, X, I); }
primary(A) ::= primary(X) DOT(O) NAME(N). { A = lang_attr(p, O.pos, X, &N); }

atom(A) ::= NAME(N).                     { A = lang_name(p, &N); }
atom(A) ::= INT(T).                      { A = lang_int(p, &T); }
atom(A) ::= FLOAT(T).                    { A = lang_float(p, &T); }
atom(A) ::= strings(S).                  { A = S; }
atom(A) ::= TRUE(K).                     { A = lang_node(p, N_TRUE, K.pos); }
atom(A) ::= FALSE(K).                    { A = lang_node(p, N_FALSE, K.pos); }
atom(A) ::= NONE(K).                     { A = lang_node(p, N_NONE, K.pos); }
atom(A) ::= ELLIPSIS(K).                 { A = lang_node(p, N_ELLIPSIS, K.pos); }
atom(A) ::= LPAREN(K) RPAREN.            { NodeList e = {0}; A = lang_seq(p, N_TUPLE, K.pos, e); }
atom(A) ::= LPAREN testlist(E) RPAREN.   { A = E; A->parens = 1; }
atom(A) ::= LPAREN yieldexpr(E) RPAREN.  { A = E; A->parens = 1; }
atom(A) ::= LPAREN(K) expr(E) comp(C) RPAREN. { A = lang_comp(p, K.pos, COMP_GEN, E, C.head); A->parens = 1; }
atom(A) ::= LBRACKET(K) expr(E) comp(C) RBRACKET. { A = lang_comp(p, K.pos, COMP_LIST, E, C.head); }
atom(A) ::= LBRACE(K) expr(E) comp(C) RBRACE. { A = lang_comp(p, K.pos, COMP_SET, E, C.head); }
atom(A) ::= LBRACE(K) pair(E) comp(C) RBRACE. { A = lang_comp(p, K.pos, COMP_DICT, E, C.head); }

/* The clauses of a comprehension: `for targets in iterable` then any `for` and `if` clauses.
 * An iterable or condition is a disjunction, as in Python: a following `if` is a clause, not a
 * conditional expression (the [IN] precedence makes the parser reduce there). */
%type comp {NodeList}
comp(A) ::= compfor(F).                  { A = lang_list1(F); }
comp(A) ::= comp(L) compfor(F).          { A = lang_list_add(L, F); }
comp(A) ::= comp(L) IF(K) expr(C). [IN]  { A = lang_list_add(L, lang_node1(p, N_IF, K.pos, C)); }
compfor(A) ::= FOR(K) targets(T) IN expr(I). [IN] { A = lang_comp_for(p, K.pos, T, I); }
atom(A) ::= LBRACKET(K) RBRACKET.        { NodeList e = {0}; A = lang_seq(p, N_LIST, K.pos, e); }
atom(A) ::= LBRACKET(K) items(L) RBRACKET. { A = lang_seq(p, N_LIST, K.pos, L); }
/* {} is a dict, {a, b} a set, {k: v, ...} a dict of N_PAIR items. */
atom(A) ::= LBRACE(K) RBRACE.            { NodeList e = {0}; A = lang_seq(p, N_DICT, K.pos, e); }
atom(A) ::= LBRACE(K) items(L) RBRACE.   { A = lang_seq(p, N_SET, K.pos, L); }
atom(A) ::= LBRACE(K) pairs(L) RBRACE.   { A = lang_seq(p, N_DICT, K.pos, L); }
atom(A) ::= LBRACE(K) pairs(L) COMMA RBRACE. { A = lang_seq(p, N_DICT, K.pos, L); }
%type pairs {NodeList}
pairs(A) ::= pair(X).                    { A = lang_list1(X); }
pairs(A) ::= pairs(L) COMMA pair(X).     { A = lang_list_add(L, X); }
pair(A) ::= expr(K) COLON expr(V).       { A = lang_node2(p, N_PAIR, K->pos, K, V); }
/* {**d, k: v}: d's items (an N_STARRED of op 2, as in a call) */
pair(A) ::= POW(O) expr(E).              { A = lang_node1(p, N_STARRED, O.pos, E); A->op = 2; }

/* Adjacent string literals are one string, as in Python. */
strings(A) ::= STRING(T).                { A = lang_string(p, NULL, &T); }
strings(A) ::= strings(S) STRING(T).     { A = lang_string(p, S, &T); }
strings(A) ::= FSTRING(T).               { A = lang_fstring(p, NULL, &T); }
strings(A) ::= strings(S) FSTRING(T).    { A = lang_fstring(p, S, &T); }

%type items {NodeList}
items(A) ::= sexpr(E).                   { A = lang_list1(E); }
items(A) ::= sexpr(E) COMMA.             { A = lang_list1(E); }
items(A) ::= eseq(L).                    { A = L; }
items(A) ::= eseq(L) COMMA.              { A = L; }

%type args {NodeList}
%type args1 {NodeList}
args(A) ::= .                            { A.head = A.tail = NULL; }
args(A) ::= args1(L).                    { A = L; }
args(A) ::= args1(L) COMMA.              { A = L; }
args1(A) ::= arg(X).                     { A = lang_list1(X); }
args1(A) ::= args1(L) COMMA arg(X).      { A = lang_list_add(L, X); }
arg(A) ::= expr(E).                      { A = E; }
arg(A) ::= expr(E) comp(C).              { A = lang_comp(p, E->pos, COMP_GEN, E, C.head); }
arg(A) ::= NAME(N) ASSIGN expr(E).       { A = lang_kwarg(p, &N, E); }
arg(A) ::= STAR(O) expr(E).              { A = lang_node1(p, N_STARRED, O.pos, E); }
arg(A) ::= POW(O) expr(E).               { A = lang_node1(p, N_STARRED, O.pos, E); A->op = 2; }

/* t[i], t[i, j], t[a:b:c, ..., None]: one item, or an N_TUPLE of items. */
/* t[*dims] is t[tuple(dims)], as in Python 3.11 */
subscripts(A) ::= sub(X).                { A = X->kind == N_STARRED ? lang_seq(p, N_TUPLE, X->pos, lang_list1(X)) : X; }
subscripts(A) ::= sub(X) COMMA.          { A = lang_seq(p, N_TUPLE, X->pos, lang_list1(X)); }
subscripts(A) ::= subseq(L).             { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
subscripts(A) ::= subseq(L) COMMA.       { A = lang_seq(p, N_TUPLE, L.head->pos, L); }
%type subseq {NodeList}
subseq(A) ::= sub(X) COMMA sub(Y).       { A = lang_list_add(lang_list1(X), Y); }
subseq(A) ::= subseq(L) COMMA sub(Y).    { A = lang_list_add(L, Y); }
sub(A) ::= expr(E).                      { A = E; }
sub(A) ::= STAR(O) expr(E).              { A = lang_node1(p, N_STARRED, O.pos, E); }
sub(A) ::= optexpr(X) COLON(K) optexpr(Y). { A = lang_slice(p, K.pos, X, Y, NULL); }
sub(A) ::= optexpr(X) COLON(K) optexpr(Y) COLON optexpr(Z). { A = lang_slice(p, K.pos, X, Y, Z); }
optexpr(A) ::= .                         { A = NULL; }
optexpr(A) ::= expr(E).                  { A = E; }
