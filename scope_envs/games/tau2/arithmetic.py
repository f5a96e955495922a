"""The ``calculate`` tool (airline, retail) without ``eval``: a bounded arithmetic evaluator.

tau^2-bench's ``calculate`` checks that the expression holds only the characters
``0123456789+-*/(). `` and returns ``str(round(float(eval(expression)), 2))``;
any exception becomes the tool message ``Error: <str(exception)>``. The
whitelist lets ``**`` through, so ``9**9**9`` never returns and ``2**2**30``
takes seconds and hundreds of megabytes. ``calculate`` here gives the same
answer and the same error text as upstream for every expression whose integers
stay within ``MAX_INT_BITS`` and whose nesting Python's parser accepts (every
calculation a customer-service agent writes, and all the gold actions of the
real tasks), and refuses the rest with ``Error: expression too large to
evaluate``:

* it parses with ``ast.parse`` (the parser ``eval`` uses, after the same
  stripping of leading spaces, so a syntax error has the same message) and
  walks the tree *iteratively* (a 4,000-character ``1+1+...`` is 2,000 levels
  deep), in ``eval``'s order (left operand, right operand, operator; a call's
  callee, then its argument);
* every operation is Python's own (``operator.add`` ... on the same values), so
  results, rounding, ``inf``/``nan`` and exceptions (``division by zero``, a
  complex result, ``int too large to convert to float``, ``'int' object is not
  callable``) are eval's;
* the only operations that are not constant time on small inputs, products and
  powers of integers, are checked *before* they run: no integer may exceed
  ``MAX_INT_BITS`` bits (a power's result size follows from its exponent and
  base, so this is also the exponent limit), and no tree may have more than
  ``MAX_NODES`` value nodes. With integers of at most 32,768 bits the costliest
  single operation (a floor division of two such integers, or the power that
  builds one) takes well under a millisecond, and a 4,000-character expression
  holds at most about 200 of them: the worst expressions we could build take
  about 0.2 s and a few megabytes (``2**32767//3**10337`` repeated), where eval
  needs unbounded time (``9**9**9``) or seconds and 450 MB (``2**2**30``).

The limits refuse nothing a customer-service calculation needs: its integers
are prices and counts; the final ``float`` can only hold 1,024 bits anyway, and
32,768 bits (about 9,900 digits, more than the 4,300 Python will print) leave
room for intermediates like ``10**400/10**399`` (which upstream answers:
``10.0``). What is refused: an integer intermediate over 32,768 bits (upstream
answers ``2**40000`` with ``int too large to convert to float`` and
``2**40000//2**39999`` with ``2.0``, here both are too large), and a tree too
deep for Python's parser (more than ~3,000 levels; upstream's answer there is a
recursion error whose threshold depends on the caller's stack).
"""

from __future__ import annotations

import ast
import math
import operator

from scope_envs.games.tau2.tools import ToolError

ALLOWED = frozenset("0123456789+-*/(). ")
MAX_INT_BITS = 1 << 15  # 32,768 bits, about 9,900 decimal digits
MAX_NODES = 4000  # value nodes; each takes at least one character, so a 4,000-character message never hits it
TOO_LARGE = "expression too large to evaluate"

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
# what the whitelisted characters can denote: numbers, ``...`` and the empty tuple ``()``; none is callable
_VALUES = (int, float, complex, tuple, type(Ellipsis))


class TooLarge(ToolError):
    def __init__(self) -> None:
        super().__init__(TOO_LARGE)


def _int_guard(op, a, b) -> None:
    """Refuse, before it runs, an integer product or power whose result would exceed ``MAX_INT_BITS``."""
    if type(a) is not int or type(b) is not int:
        return
    if op is operator.mul:
        if a.bit_length() + b.bit_length() - 1 > MAX_INT_BITS:  # a product has at least this many bits
            raise TooLarge()
    elif op is operator.pow and b > 0 and abs(a) > 1:
        # |a|**b has floor(b * log2|a|) + 1 bits; a negative exponent gives a float, |a| <= 1 stays small
        if b > MAX_INT_BITS or b * math.log2(abs(a)) >= MAX_INT_BITS:
            raise TooLarge()


def _apply(op, *args):
    if op is _CALL:
        func, arg, kind = args
        if callable(func):  # cannot happen: no whitelisted value is callable
            raise TooLarge()
        # the same call eval makes; it can only raise TypeError ("'int' object is not callable", ...)
        return func(*arg) if kind == "*" else func(**arg) if kind == "**" else func(arg) if kind else func()
    if len(args) == 2:
        _int_guard(op, *args)
    result = op(*args)
    if type(result) is int and result.bit_length() > MAX_INT_BITS:
        raise TooLarge()
    return result


_CALL = object()


def evaluate(expression: str):
    """The value ``eval(expression, {"__builtins__": None}, {})`` has, or its exception; ``TooLarge`` when
    computing it would break the limits."""
    try:  # eval strips leading spaces (and tabs) from a string before it parses it
        tree = ast.parse(expression.lstrip(" \t"), "<string>", "eval")
    except RecursionError:
        raise TooLarge() from None
    values: list = []
    todo: list = [tree.body]  # nodes to visit, and (operator, arity) entries to apply once operands are done
    nodes = 0
    while todo:
        item = todo.pop()
        if type(item) is tuple:
            op, arity, extra = item
            args = values[len(values) - arity:]
            del values[len(values) - arity:]
            values.append(_apply(op, *args, *extra))
            continue
        nodes += 1
        if nodes > MAX_NODES:
            raise TooLarge()
        kind = type(item)
        if kind is ast.Constant:
            if not isinstance(item.value, _VALUES):
                raise TooLarge()
            values.append(item.value)
        elif kind is ast.BinOp and type(item.op) in _BINARY:
            todo += [(_BINARY[type(item.op)], 2, ()), item.right, item.left]
        elif kind is ast.UnaryOp and type(item.op) in _UNARY:
            todo += [(_UNARY[type(item.op)], 1, ()), item.operand]
        elif kind is ast.Tuple and not item.elts:
            values.append(())
        elif kind is ast.Call and len(item.args) + len(item.keywords) <= 1:
            # ``(1)(2)``, ``(1)(*2)``, ``(1)(**2)``: the callee, then its argument, then the call
            if item.args:
                starred = type(item.args[0]) is ast.Starred
                arg, how = (item.args[0].value, "*") if starred else (item.args[0], "")
            elif item.keywords and item.keywords[0].arg is None:
                arg, how = item.keywords[0].value, "**"
            elif item.keywords:
                raise TooLarge()
            else:
                arg, how = None, None
            if arg is None:
                todo += [(_CALL, 1, (None, None)), item.func]
            else:
                todo += [(_CALL, 2, (how,)), arg, item.func]
        else:  # nothing else can be written with the whitelisted characters
            raise TooLarge()
    return values[0]


def calculate(expression: str) -> str:
    """tau^2-bench's ``calculate``: the value rounded to 2 places, as a string; ``ToolError`` otherwise."""
    if not all(c in ALLOWED for c in expression):
        raise ToolError("Invalid characters in expression")
    try:
        return str(round(float(evaluate(expression)), 2))
    except ToolError:
        raise
    except Exception as e:  # syntax errors, division by zero, overflow: the same message as upstream's
        raise ToolError(str(e)) from None
