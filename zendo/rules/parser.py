"""Text → Rule: tokenise, check every word is known, parse with the lark grammar, build the AST.

Errors are one line and carry a 1-based column in the text the person typed: where parsing
stopped and what could come next. Wordings that do not say which of several readings they mean
come back as RuleAmbiguous with each reading in canonical English.
"""
from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from itertools import product

from lark import Lark, Token, Transformer, Tree, v_args
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken, VisitError

from . import ast as A
from .errors import RuleSyntaxError

#: More readings than this are not listed (the person should reword instead).
MAX_READINGS = 12

_WORD = re.compile(r"non-|[a-z0-9]+(?:'[a-z]+)?(?:-[a-z]+)*|[()]")
_IGNORED = re.compile(r"[\s,;:.…\"“”!?¡¿]+")


@lru_cache(maxsize=1)
def parser() -> Lark:
    text = resources.files(__package__).joinpath("grammar.lark").read_text(encoding="utf-8")
    return Lark(text, parser="earley", lexer="basic", ambiguity="resolve", propagate_positions=True)


@lru_cache(maxsize=1)
def vocabulary() -> dict[str, str]:
    """Terminal name → the word it stands for (every literal of the grammar)."""
    out = {}
    for t in parser().terminals:
        if t.pattern.type == "str":
            out[t.name] = t.pattern.value
    return out


def _words() -> frozenset[str]:
    return frozenset(vocabulary().values())


def normalise(text: str) -> str:
    """Lower-case and unify apostrophes; keeps every character where it was (columns stay)."""
    out = text.replace("’", "'").replace("‘", "'")
    low = out.lower()
    return low if len(low) == len(out) else "".join(c.lower() if len(c.lower()) == 1 else c for c in out)


def scan(text: str, word: re.Pattern, ignored: re.Pattern, strict: bool = True) -> list[tuple[str, int]]:
    """(word, 0-based offset) of every word and bracket. A stray character raises (strict) or is
    kept as a one-character token (the Spanish translator reports it later, at its column)."""
    out, i = [], 0
    while i < len(text):
        m = ignored.match(text, i)
        if m:
            i = m.end()
            continue
        m = word.match(text, i)
        if not m:
            if strict:
                raise RuleSyntaxError(f"unexpected character {text[i]!r}", i + 1)
            out.append((text[i], i))
            i += 1
            continue
        out.append((m.group(), i))
        i = m.end()
    return out


def tokens(text: str) -> list[tuple[str, int]]:
    """(word, 0-based offset) of every English word and bracket; raises on a stray character."""
    return scan(text, _WORD, _IGNORED)


def _expected_words(names) -> list[str]:
    vocab = vocabulary()
    words = set()
    for n in names:
        if n in vocab:
            words.add(vocab[n])
        elif n == "NUMBER":
            words.add("a number")
    return sorted(words)


def _describe(expected: list[str]) -> str:
    if not expected:
        return ""
    shown = ", ".join(f"'{w}'" if w != "a number" else w for w in expected[:14])
    more = f" (+{len(expected) - 14} more)" if len(expected) > 14 else ""
    return f"; expected one of: {shown}{more}"


def _expected_at(text: str, offset: int) -> list[str]:
    """What could come at `offset`: parse the text before it and ask what was wanted next."""
    try:
        parser().parse(text[:offset])
    except UnexpectedEOF as e:
        return _expected_words(e.expected)
    except UnexpectedToken as e:
        return _expected_words(e.expected) if e.token.type == "$END" else []
    except UnexpectedInput:
        return []
    return []


def parse_condition(text: str):
    """The AST (possibly holding Amb) of a lower-cased English rule; raises RuleSyntaxError."""
    if not text.strip():
        raise RuleSyntaxError("the rule is empty; expected e.g. 'A koan has the Buddha-nature if and only if ...'", 1)
    words = _words()
    for word, at in tokens(text):
        if word not in words and not word.isdigit():
            exp = _expected_at(text, at)
            raise RuleSyntaxError(f"unknown word '{word}' at column {at + 1}{_describe(exp)}", at + 1)
    try:
        tree = parser().parse(text)
    except UnexpectedToken as e:
        if e.token.type == "$END":
            col = len(text.rstrip(" .;,!?…")) + 1
            raise RuleSyntaxError(f"the rule stops too early at column {col}{_describe(_expected_words(e.expected))}",
                                  col) from None
        col = e.column if isinstance(e.column, int) and e.column > 0 else 1
        raise RuleSyntaxError(f"unexpected '{e.token}' at column {col}{_describe(_expected_words(e.expected))}",
                              col) from None
    except UnexpectedEOF as e:
        col = len(text.rstrip(" .;,!?…")) + 1
        raise RuleSyntaxError(f"the rule stops too early at column {col}{_describe(_expected_words(e.expected))}",
                              col) from None
    except UnexpectedCharacters as e:
        raise RuleSyntaxError(f"unexpected character {text[e.pos_in_stream]!r} at column {e.column}",
                              e.column) from None
    try:
        return ToAst().transform(tree)
    except VisitError as e:
        if isinstance(e.orig_exc, RuleSyntaxError):
            raise e.orig_exc from None
        raise


# ----------------------------------------------------------------------------- readings


def readings(node) -> list:
    """Every complete reading of a condition (Amb expanded, products across and/or/not)."""
    if isinstance(node, A.Amb):
        out = []
        for r in node.readings:
            for x in readings(r):
                if x not in out:
                    out.append(x)
        return out
    if isinstance(node, (A.And, A.Or)):
        combos = product(*(readings(x) for x in node.items))
        out = []
        for combo in combos:
            x = A.make_and(combo) if isinstance(node, A.And) else A.make_or(combo)
            if x not in out:
                out.append(x)
            if len(out) > MAX_READINGS:
                break
        return out
    if isinstance(node, A.Not):
        return [A.make_not(x) for x in readings(node.inner)]
    return [node]


# ----------------------------------------------------------------------------- tree → AST

_SYN = {"standing": "upright", "lying": "flat", "big": "large", "biggest": "largest"}
_OPS_FLIP = {">=": "<=", "<=": ">=", "==": "==", ">": "<", "<": ">"}


def _word(tree_or_token) -> str:
    if isinstance(tree_or_token, Token):
        return str(tree_or_token)
    return _word(tree_or_token.children[0])


def _adj_filter(t) -> A.Filter:
    if isinstance(t, A.NotF) or isinstance(t, A.Is):
        return t
    kind = t.data
    w = _SYN.get(_word(t), _word(t))
    if kind == "colour":
        return A.Is("color", w)
    if kind == "size":
        return A.Is("size", w)
    if kind == "orient":
        return A.Is("orientation", w)
    if kind == "ground":
        return A.Is("grounded", w == "grounded")
    raise ValueError(kind)


class _Quant(tuple):
    """(op, n, bare): a parsed quantifier."""


class _NP:
    """A noun phrase under construction: its Desc and whether it was plural."""

    def __init__(self, desc: A.Desc, plural: bool, pos: int):
        self.desc, self.plural, self.pos = desc, plural, pos


class _Group:
    def __init__(self, same: A.Same):
        self.same = same


def _bare_readings(op_n_bare, make):
    """A bare number ("contains two upright pieces"): exactly or at least? (seed 001 TERMINOLOGY)."""
    op, n, bare = op_n_bare
    if bare and n == 0:
        return make("==", 0)
    if not bare:
        return make(op, n)
    exact, least = make("==", n), make(">=", n)
    return A.Amb((exact, least)) if exact != least else exact


@v_args(tree=True)
class ToAst(Transformer):
    # ---------------------------------------------------------------- rule
    def rule_pos(self, t):
        return ("pos", [c for c in t.children if not isinstance(c, Tree)][-1])

    def rule_neg(self, t):
        return ("neg", [c for c in t.children if not isinstance(c, Tree)][0])

    def start(self, t):
        return t.children[0]

    # ---------------------------------------------------------------- booleans
    def or_(self, t):
        return A.make_or(t.children)

    def and_(self, t):
        return A.make_and(t.children)

    def not_(self, t):
        return A.make_not(t.children[0])

    def unless_(self, t):
        return A.make_and([t.children[0], A.make_not(t.children[1])])

    # ---------------------------------------------------------------- quantifiers
    def num(self, t):
        c = t.children[0]
        if isinstance(c, Token):
            return int(c)
        return A.NUM_WORDS.index(str(c.children[0]))

    def q_ge(self, t):
        return _Quant((">=", t.children[-1] if isinstance(t.children[-1], int) else t.children[0], False))

    def q_le(self, t):
        n = next(c for c in t.children if isinstance(c, int))
        return _Quant(("<=", n, False))

    def q_eq(self, t):
        return _Quant(("==", t.children[0], False))

    def q_gt(self, t):
        return _Quant((">", t.children[0], False))

    def q_lt(self, t):
        n = next(c for c in t.children if isinstance(c, int))
        return _Quant(("<", n, False))

    def q_none(self, t):
        return _Quant(("==", 0, False))

    def q_some(self, t):
        return _Quant((">=", 1, False))

    def q_bare(self, t):
        return _Quant((">=", t.children[0], True))

    # ---------------------------------------------------------------- noun phrases
    def non(self, t):
        return A.NotF(_adj_filter(t.children[0]))

    def np_plain(self, t):
        adjs, noun, posts = self._np_parts(t.children)
        return _NP(A.Desc.make(adjs + posts), noun.endswith("s"), t.meta.column if not t.meta.empty else 0)

    def np_sup(self, t):
        sup = _SYN.get(_word(t.children[0]), _word(t.children[0]))
        adjs, noun, posts = self._np_parts(t.children[1:])
        return _NP(A.Desc.make(adjs, sup, posts), noun.endswith("s"), t.meta.column if not t.meta.empty else 0)

    def _np_parts(self, children):
        adjs, noun, posts = [], "pieces", []
        for c in children:
            if isinstance(c, Tree) and c.data == "noun":
                noun = _word(c)
            elif isinstance(c, list):
                posts = c
            else:
                adjs.append(_adj_filter(c))
        return adjs, noun, posts

    def posts(self, t):
        return list(t.children)

    def p_rel(self, t):
        return self._rel(t.children[0], t.children[1])

    def _rel(self, rel_tree, target):
        rel = rel_tree.data[2:]
        op, n, desc = target
        return A.Rel(rel, desc, op, n)

    def p_each(self, t):
        return A.EachOther(t.children[0].data[2:])

    def p_grounded(self, t):
        return A.Is("grounded", True)

    def p_not(self, t):
        return A.neg_filter(t.children[0])

    def p_pred(self, t):
        pred = [c for c in t.children if not (isinstance(c, Tree) and c.data == "be")][-1]
        if isinstance(pred, _Group):
            raise RuleSyntaxError("a group property ('the same colour') cannot describe one piece", 1)
        return pred

    def p_pips(self, t):
        return A.Is("pips", t.children[0])

    # targets
    def t_quant(self, t):
        q = t.children[0]
        if q[2] and q[1] == 0:
            q = _Quant(("==", 0, False))
        if q[2]:
            col = t.meta.column if not t.meta.empty else 1
            raise RuleSyntaxError(
                f"say 'at least {A.num_text(q[1])}' or 'exactly {A.num_text(q[1])}' at column {col}", col)
        adjs = [_adj_filter(c) for c in t.children[1:] if not (isinstance(c, Tree) and c.data == "noun")]
        return (q[0], q[1], A.Desc.make(adjs))

    def t_some(self, t):
        adjs = [_adj_filter(c) for c in t.children if not (isinstance(c, Tree) and c.data == "noun")]
        return (">=", 1, A.Desc.make(adjs))

    # predicates
    def pred1(self, t):
        return _adj_filter(t.children[0])

    def lying_flat(self, t):
        return A.Is("orientation", "flat")

    def grounded_pred(self, t):
        return A.Is("grounded", True)

    def rel_pred(self, t):
        return self._rel(t.children[0], t.children[1])

    def each_pred(self, t):
        return A.EachOther(t.children[0].data[2:])

    def pips_pred(self, t):
        return A.Is("pips", t.children[0])

    def not_pred(self, t):
        inner = [c for c in t.children if not (isinstance(c, Tree) and c.data == "dont")][-1]
        return A.neg_filter(inner)

    def vpred(self, t):
        return [c for c in t.children if not (isinstance(c, Tree) and c.data == "be")][-1]

    def same_colour(self, t):
        return _Group(A.Same("color"))

    def same_size(self, t):
        return _Group(A.Same("size"))

    def same_orientation(self, t):
        return _Group(A.Same("orientation"))

    def same_direction(self, t):
        return _Group(A.Same("direction"))

    # ---------------------------------------------------------------- contains
    def contains_and(self, t):
        return A.make_and([c for c in t.children if not isinstance(c, Tree)])

    def contains_or(self, t):
        return A.make_or([c for c in t.children if not isinstance(c, Tree)])

    def contains_none(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        return A.Cmp(A.CountOf(np_.desc), "==", A.Num(0))

    def count(self, t):
        q, np_ = t.children
        return _bare_readings(q, lambda op, n: A.Cmp(A.CountOf(np_.desc), op, A.Num(n)))

    def count_bare(self, t):
        return A.Cmp(A.CountOf(t.children[0].desc), ">=", A.Num(1))

    def count_parity(self, t):
        par, np_ = t.children
        return A.Parity(A.CountOf(np_.desc), par.data == "odd")

    def more_than(self, t):
        a, b = t.children
        return A.Cmp(A.CountOf(a.desc), ">", A.CountOf(b.desc))

    def fewer_than(self, t):
        a, b = [c for c in t.children if isinstance(c, _NP)]
        return A.Cmp(A.CountOf(a.desc), "<", A.CountOf(b.desc))

    def same_number(self, t):
        a, b = t.children
        return A.Cmp(A.CountOf(a.desc), "==", A.CountOf(b.desc))

    def at_least_as_many(self, t):
        a, b = t.children
        return A.Cmp(A.CountOf(a.desc), ">=", A.CountOf(b.desc))

    def at_most_as_many(self, t):
        a, b = t.children
        return A.Cmp(A.CountOf(a.desc), "<=", A.CountOf(b.desc))

    def k_colour(self, t):
        return "color"

    def k_size(self, t):
        return "size"

    def kinds_count(self, t):
        q, prop = t.children
        return _bare_readings(q, lambda op, n: A.Cmp(A.KindsOf(prop, A.ALL), op, A.Num(n)))

    def kinds_parity(self, t):
        par, prop = t.children
        return A.Parity(A.KindsOf(prop, A.ALL), par.data == "odd")

    def each_colour(self, t):
        return A.EachOf("color")

    def each_size(self, t):
        return A.EachOf("size")

    def p_colour(self, t):
        return "color"

    def p_size(self, t):
        return "size"

    def p_orientation(self, t):
        return "orientation"

    def plurality(self, t):
        np_ = t.children[0]
        prop = t.children[-1]
        return self._plurality(np_.desc, prop, t)

    def _plurality(self, desc: A.Desc, prop: str, t):
        kinds = {"color": "color", "size": "size", "orientation": "orientation"}
        if desc.sup is None and len(desc.pre) == 1 and isinstance(desc.pre[0], A.Is) and desc.pre[0].kind == kinds[prop]:
            return A.Plurality(prop, desc.pre[0].value)
        col = t.meta.column if not t.meta.empty else 1
        raise RuleSyntaxError(f"a plurality needs one {A._prop_word(prop)}, e.g. 'more red pieces than pieces of "
                              f"any other colour' (column {col})", col)

    def majority_np(self, t):
        """'it contains a majority of red pieces': majority or plurality? (seed 001 asks)."""
        np_ = t.children[-1]
        return self._majority_readings(A.ALL, np_.desc, t)

    def _majority_readings(self, whole: A.Desc, part_desc: A.Desc, t):
        parts = part_desc.pre
        if part_desc.sup is not None or not parts:
            col = t.meta.column if not t.meta.empty else 1
            raise RuleSyntaxError(f"say what the majority is of, e.g. 'a majority of its pieces are red' (column {col})", col)
        part = parts[0] if len(parts) == 1 else None
        options = []
        if part is not None:
            options.append(A.Majority(whole, part))
            if whole == A.ALL and isinstance(part, A.Is) and part.kind in ("color", "size", "orientation"):
                options.append(A.Plurality(part.kind, part.value))
        else:
            col = t.meta.column if not t.meta.empty else 1
            raise RuleSyntaxError(f"a majority of pieces with one property only (column {col})", col)
        return options[0] if len(options) == 1 else A.Amb(tuple(options))

    # ---------------------------------------------------------------- subjects
    def subj_count(self, t):
        q = t.children[0]
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        pred = t.children[-1]
        desc = _with_filter(np_.desc, pred)
        return _bare_readings(q, lambda op, n: A.Cmp(A.CountOf(desc), op, A.Num(n)))

    def subj_none(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        return A.Cmp(A.CountOf(_with_filter(np_.desc, t.children[-1])), "==", A.Num(0))

    def gpred(self, t):
        return [c for c in t.children if not (isinstance(c, Tree) and c.data == "be")][-1]

    gpred2 = gpred

    def all_clause(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        ifany = any(isinstance(c, Tree) and c.data == "ifany" for c in t.children)
        pred = t.children[-1]
        pred = pred.same if isinstance(pred, _Group) else pred
        if ifany:
            return A.All.make(np_.desc, pred, 0)
        return _all_readings(np_.desc, pred)

    def explicit_all(self, t):
        q = [c for c in t.children if isinstance(c, _Quant)][0]
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        pred = t.children[-1]
        pred = pred.same if isinstance(pred, _Group) else pred
        if q[0] not in (">=",) and not (q[0] == ">" and True):
            raise RuleSyntaxError("say 'at least N ... and they are all ...'", 1)
        n = q[1] + 1 if q[0] == ">" else q[1]
        return A.All.make(np_.desc, pred, n)

    def definite_clause(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        pred = t.children[-1]
        if isinstance(pred, _Group):
            return _all_readings(np_.desc, pred.same)
        if np_.plural:
            return _all_readings(np_.desc, pred)
        return _definite_readings(np_.desc, pred)

    # ---------------------------------------------------------------- aggregates
    def ref_np(self, t):
        return [c for c in t.children if isinstance(c, _NP)][0].desc

    def pips_all(self, t):
        return A.PipsOf(A.ALL)

    def pips_of(self, t):
        return A.PipsOf(t.children[-1])

    def count_of(self, t):
        return A.CountOf(t.children[-1])

    def kinds_all(self, t):
        return A.KindsOf(t.children[0], A.ALL)

    def kinds_of(self, t):
        return A.KindsOf(t.children[0], t.children[-1])

    def c_odd(self, t):
        return ("odd", True)

    def c_even(self, t):
        return ("odd", False)

    def _c(op):
        def fn(self, t):
            v = t.children[-1]
            return (op, A.Num(v) if isinstance(v, int) else v)
        return fn

    c_ge, c_le, c_eq, c_gt, c_lt = _c(">="), _c("<="), _c("=="), _c(">"), _c("<")

    def quantity_clause(self, t):
        q, (op, rhs) = t.children
        if op == "odd":
            return A.Parity(q, rhs)
        return A.Cmp(q, op, rhs)

    def quantity_equals(self, t):
        return A.Cmp(t.children[0], "==", t.children[-1])

    def majority_amb(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        pred = t.children[-1]
        return self._majority_readings(np_.desc, A.Desc.make([pred]), t)

    def majority(self, t):
        np_ = [c for c in t.children if isinstance(c, _NP)][0]
        return A.Majority(np_.desc, t.children[-1])


def _with_filter(desc: A.Desc, pred) -> A.Desc:
    if isinstance(pred, _Group):
        raise RuleSyntaxError("a group property ('the same colour') needs 'all its ... are'", 1)
    if desc.sup is None:
        return A.Desc.make(desc.pre + (pred,))
    return A.Desc.make(desc.pre, desc.sup, desc.post + (pred,))


def _all_readings(desc: A.Desc, pred):
    """Seed 001's problem cases: natural language (the referent must exist) vs western logic."""
    natural = A.All.make(desc, pred, 2 if isinstance(pred, A.Same) and pred.prop == "direction" else 1)
    western = A.All.make(desc, pred, 0)
    return natural if natural == western else A.Amb((natural, western))


def _definite_readings(desc: A.Desc, pred):
    """"The largest piece is red": all of them, any of them, or there is exactly one and it is."""
    options = []
    options.extend(readings(_all_readings(desc, pred)))
    options.append(A.Cmp(A.CountOf(_with_filter(desc, pred)), ">=", A.Num(1)))
    options.append(A.make_and([A.Cmp(A.CountOf(desc), "==", A.Num(1)),
                               A.Cmp(A.CountOf(_with_filter(desc, pred)), ">=", A.Num(1))]))
    uniq = []
    for o in options:
        if o not in uniq:
            uniq.append(o)
    return A.Amb(tuple(uniq))
