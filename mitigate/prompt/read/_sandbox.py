"""The one Jinja environment mitigate renders templates in: a sandbox no template can leave.

A judge template is input like the judged text (downloaded, shared, edited by others); every Jinja
template mitigate reads is parsed and rendered here, and nowhere else. A template may read the names it
is given, index strings, lists and mappings, read a mapping's keys as attributes and ``loop``'s fields;
test, loop, assign, compare and compute; call only :data:`CALLS`; use only :data:`FILTERS` and
:data:`TESTS`. It may not read an attribute starting with ``_`` (Python's internals) nor any attribute of
a string, number, list or function, call anything else, define macros, include, import or extend another
template, or format strings with ``%``. Its size is bounded while it is built: every value a filter,
operator, literal, slice or block makes, and every piece of text written (kept by a ``{% set %}`` or
``{% filter %}`` block or not), is weighed as the text it would become (:func:`weigh`, which reads a list
shared a thousand times a thousand times without building anything) and charged to the render's budget
(:data:`MAX_VALUE_CHARS` a value, :data:`MAX_OUTPUT_CHARS` the output, :data:`MAX_BUILT_CHARS` everything,
:data:`MAX_INT_BITS` a number); a filter that writes its input as text (``|string``, ``|tojson``, ``|join``
...) is weighed before it runs, so nothing past a bound is built. Loops take at most :data:`MAX_LOOP_STEPS`
steps, and a render at most :data:`MAX_SECONDS` of CPU time, checked at every step, filter, operator,
lookup and write (no one of which can run long, since none builds past the budget).

A construct forbidden anywhere in the template (even in a branch that would not run) is refused before
anything renders; a limit reached while rendering stops it. Either way the error is a
:class:`~mitigate.errors.TemplateSandboxError` naming the construct (its line) and the rule.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sized
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import Context, LoopContext, Undefined
from jinja2.sandbox import SandboxedEnvironment
from jinja2.utils import pass_context

from mitigate.errors import TemplateError, TemplateSandboxError

MAX_OUTPUT_CHARS = 1_000_000  # longest rendered template, in characters
MAX_VALUE_CHARS = 1_000_000  # longest string, list or mapping a template may build (as text)
MAX_BUILT_CHARS = 5_000_000  # most characters one render may build and write in all
MAX_INT_BITS = 4_096  # largest integer a template may build, in bits
MAX_RANGE = 10_000  # most numbers one range(...) may give
MAX_LOOP_STEPS = 100_000  # most steps all loops of one render may take together
MAX_SECONDS = 10.0  # most CPU time a render may take
MAX_INDENT = 100  # widest indent a template may ask for

FILTERS = tuple(
    "default d tojson int float round abs min max length count lower upper title capitalize trim string join "
    "first last list reverse items dictsort sort indent truncate wordcount".split()
)
"""The filters a template may use (Jinja's own, each with its arguments and result checked)."""
TESTS = tuple(
    "defined undefined none boolean true false integer float number string mapping sequence iterable "
    "in eq == equalto ne != lt < lessthan le <= gt > greaterthan ge >= odd even divisibleby lower upper "
    "sameas".split()
)
"""The tests (``is ...``) a template may use."""
CALLS = (
    "range(...)",
    "MAPPING.items()",
    "MAPPING.keys()",
    "MAPPING.values()",
    "loop.cycle(...)",
    "loop.changed(...)",
)
"""The only calls a template may make (shown in refusals)."""

_MAPPING_METHODS = frozenset({"items", "keys", "values"})
_LOOP_FIELDS = frozenset(
    "index index0 revindex revindex0 first last length depth depth0 previtem nextitem cycle changed".split()
)
_LOOP_METHODS = frozenset({"cycle", "changed"})
# wraps every loop's iterable (added after the checks; not usable by templates)
_STEP_FILTER = "mitigate_loop_step"
# the filters that write their input as text: weighed before they run
_WRITES_TEXT = frozenset(
    "string tojson join lower upper title capitalize trim indent truncate wordcount".split()
)
_READS_OTHER_FILES = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


def _line(text: str, lineno: int) -> str:
    lines = text.splitlines()
    shown = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
    return f"line {lineno}: {shown[:100]}{'...' if len(shown) > 100 else ''}"


def _kind(value: Any) -> str:
    """A value's kind in words, for a refusal ("a str", "a function" ...)."""
    if callable(value) and not isinstance(value, type):
        return "a function"
    return f"a {type(value).__name__}"


def _scalar(value: Any) -> int | None:
    """The characters of a value that holds no other (as an item of a list), None for a container."""
    if isinstance(value, str | bytes | bytearray):
        return len(value) + 2
    if isinstance(value, bool) or value is None:
        return 5
    if isinstance(value, int):
        return value.bit_length() * 3 // 10 + 2
    if isinstance(value, Undefined):  # before the containers: an undefined value iterates (or refuses to)
        return 0
    if isinstance(value, range):
        return len(repr(value))
    if isinstance(value, Mapping) or (
        isinstance(value, Iterable) and isinstance(value, Sized) and not isinstance(value, Iterator)
    ):
        return None
    return 24  # a float, a function, an iterator (never consumed here) ...


def _items(value: Any) -> Iterator[Any]:
    if isinstance(value, Mapping):
        return itertools.chain.from_iterable(value.items())
    return iter(value)


def weigh(value: Any, limit: int, indent: int = 0, tick: Callable[[], None] | None = None) -> int:
    """About how many characters ``value`` takes as text (``str``, ``repr`` or JSON), without building it.

    A string is its length; a list, tuple, set or mapping the weights of its items and a separator each (an
    item shared by many places counts at each, but is read once); with ``indent``, the line breaks and
    indentation of JSON indented by that many spaces a level. Counting stops once past ``limit`` (the
    weight returned is then over the limit, not exact); ``tick`` is called every few thousand items.
    """
    top = _scalar(value)
    if top is not None:
        return top - 2 if isinstance(value, str | bytes | bytearray) else top
    done: dict[int, tuple[int, int, int]] = {}  # id -> (characters, items below, sum of their depths)
    stack: list[list[Any]] = [[value, _items(value), 2, 0, 0]]
    open_ids = {id(value)}
    steps = 0
    while True:
        frame = stack[-1]
        for child in frame[1]:
            steps += 1
            if tick is not None and steps % 4096 == 0:
                tick()
            chars = _scalar(child)
            if chars is None:
                if id(child) in done:
                    chars, below, depths = done[id(child)]
                elif id(child) in open_ids:  # a cycle: written as [...]
                    chars, below, depths = 5, 0, 0
                else:
                    stack.append([child, _items(child), 2, 0, 0])
                    open_ids.add(id(child))
                    break
            else:
                below = depths = 0
            frame[2] += chars + 2
            frame[3] += 1 + below
            frame[4] += 1 + depths + below
            if frame[2] + frame[3] + indent * frame[4] > limit:
                return frame[2] + frame[3] + indent * frame[4]
        else:
            stack.pop()
            open_ids.discard(id(frame[0]))
            done[id(frame[0])] = (frame[2], frame[3], frame[4])
            if not stack:
                total: int = frame[2] + (frame[3] + indent * frame[4] if indent else 0)
                return total
            parent = stack[-1]
            parent[2] += frame[2] + 2
            parent[3] += 1 + frame[3]
            parent[4] += 1 + frame[4] + frame[3]
            if parent[2] + parent[3] + indent * parent[4] > limit:
                return parent[2] + parent[3] + indent * parent[4]


class _Generator(CodeGenerator):
    """Jinja's code generator with ``~``, every literal list, tuple and mapping, and every piece of text
    written routed through the sandbox's budget."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        self.write("environment.mitigate_concat((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def _literal(self, visit: Callable[[Any, Frame], None], node: nodes.Expr, frame: Frame) -> None:
        self.write("environment.check_value(")
        visit(node, frame)
        self.write(", 'a literal')")

    def visit_List(self, node: nodes.List, frame: Frame) -> None:
        self._literal(super().visit_List, node, frame)

    def visit_Dict(self, node: nodes.Dict, frame: Frame) -> None:
        self._literal(super().visit_Dict, node, frame)

    def visit_Tuple(self, node: nodes.Tuple, frame: Frame) -> None:
        if node.ctx == "load":
            self._literal(super().visit_Tuple, node, frame)
        else:  # a loop's or an assignment's targets
            super().visit_Tuple(node, frame)

    def visit_Getitem(self, node: nodes.Getitem, frame: Frame) -> None:
        if not isinstance(node.arg, nodes.Slice):  # Jinja writes a slice as Python's, past the sandbox
            super().visit_Getitem(node, frame)
            return
        self.write("environment.mitigate_slice(")
        self.visit(node.node, frame)
        self.write(", slice(")
        for k, part in enumerate((node.arg.start, node.arg.stop, node.arg.step)):
            self.write(", " if k else "")
            if part is None:
                self.write("None")
            else:
                self.visit(part, frame)
        self.write("))")

    def _output_const_repr(self, group: Iterable[Any]) -> str:
        return f"environment.mitigate_write({super()._output_const_repr(group)})"


class _Sandbox(SandboxedEnvironment):
    """The sandboxed environment of one render (it counts that render's loop steps and time)."""

    code_generator_class = _Generator
    intercepted_binops = frozenset({"*", "**", "+", "%", "//"})

    def __init__(self, undefined: type[Undefined]) -> None:
        super().__init__(undefined=undefined, keep_trailing_newline=True, autoescape=False)
        self.globals.clear()
        self.globals["range"] = self._range
        builtin_filters, builtin_tests = dict(self.filters), dict(self.tests)
        self.filters = {name: self._checked_filter(name, builtin_filters[name]) for name in FILTERS}
        self.filters[_STEP_FILTER] = self._loop_step
        self.tests = {name: builtin_tests[name] for name in TESTS}
        self.finalize = self._written  # every {{ expression }} before it becomes text
        self.steps = self.built = 0
        self.started = time.thread_time()

    # ----------------------------------------------------------------------------- limits

    def tick(self, steps: int = 1) -> None:
        """Count loop steps and check the render's CPU time."""
        self.steps += steps
        if self.steps > MAX_LOOP_STEPS:
            raise TemplateSandboxError(
                f"the template's loops ran more than {MAX_LOOP_STEPS:,} steps (the "
                "sandbox's bound on a render)"
            )
        if time.thread_time() - self.started > MAX_SECONDS:
            raise TemplateSandboxError(
                f"the template took more than {MAX_SECONDS:g} s of CPU time to render (the sandbox's bound "
                "on a render)"
            )

    def weigh(self, value: Any, indent: int = 0) -> int:
        """:func:`weigh` up to the value bound, checking the clock as it reads."""
        return weigh(value, MAX_VALUE_CHARS, indent, self.tick_clock)

    def tick_clock(self) -> None:
        self.tick(0)

    @staticmethod
    def check_size(size: int, what: str) -> None:
        if size > MAX_VALUE_CHARS:
            raise TemplateSandboxError(
                f"the template builds {what} of {size:,} characters or items or more; the "
                f"sandbox allows at most {MAX_VALUE_CHARS:,}"
            )

    def charge(self, size: int, what: str) -> None:
        """Count ``size`` characters built toward the render's budget (refused past it)."""
        self.built += size
        if self.built > MAX_BUILT_CHARS:
            raise TemplateSandboxError(
                f"the template builds more than {MAX_BUILT_CHARS:,} characters in all (the sandbox's bound "
                f"on a render; reached at {what})"
            )
        self.tick(0)

    @staticmethod
    def check_bits(bits: int, what: str) -> None:
        if bits > MAX_INT_BITS:
            raise TemplateSandboxError(
                f"the template builds {what}, a number of about {bits:,} bits; the "
                f"sandbox allows at most {MAX_INT_BITS:,}"
            )

    def check_value(self, value: Any, what: str) -> Any:
        """``value`` (just built: a filter's or operator's result, a literal list, tuple or mapping) when it
        is within the sandbox's size limits, charged to the budget."""
        if isinstance(value, int) and not isinstance(value, bool):
            self.check_bits(value.bit_length(), what)
        size = self.weigh(value)
        self.check_size(size, what)
        self.charge(size, what)
        return value

    def mitigate_concat(self, parts: tuple[Any, ...]) -> str:
        """``a ~ b``: every part as text, joined once the total is known to fit."""
        self.check_size(sum(self.weigh(p) for p in parts), "a string with '~'")
        text = "".join(str(p) for p in parts)
        self.charge(len(text), "a string with '~'")
        return text

    def mitigate_write(self, text: str) -> str:
        """A piece of the template's own text written (kept by a block or not), charged to the budget."""
        self.charge(len(text), "the template's text written in a loop")
        return text

    def mitigate_slice(self, obj: Any, part: slice) -> Any:
        """``obj[a:b:c]``, charged to the budget (a slice copies)."""
        self.tick(0)
        return self.check_value(obj[part], "a slice")

    def _written(self, value: Any) -> Any:
        """An ``{{ expression }}``'s value, weighed and charged before it is written as text."""
        size = self.weigh(value)
        self.check_size(size, "a value to write")
        self.charge(size, "a value written")
        return value

    def call_binop(self, context: Context, operator: str, left: Any, right: Any) -> Any:
        self.tick(0)
        what = f"a value with {operator!r}"
        if operator == "%" and isinstance(left, str | bytes):
            raise TemplateSandboxError(
                "the template formats a string with '%'; the sandbox refuses string "
                "formatting (a width such as %999999999d would build any size)"
            )
        sized = (str, bytes, list, tuple)
        if operator == "*":
            if isinstance(left, sized) and isinstance(right, int):
                self.check_size(self.weigh(left) * max(right, 0), what)
            elif isinstance(right, sized) and isinstance(left, int):
                self.check_size(self.weigh(right) * max(left, 0), what)
            elif isinstance(left, int) and isinstance(right, int):
                self.check_bits(left.bit_length() + right.bit_length(), what)
        elif operator == "+" and isinstance(left, sized) and isinstance(right, sized):
            self.check_size(self.weigh(left) + self.weigh(right), what)
        elif operator == "**" and isinstance(left, int) and isinstance(right, int) and right > 0:
            if abs(left) > 1:
                self.check_bits(math.ceil(right * math.log2(abs(left))), what)
        try:
            result = self.binop_table[operator](left, right)
        except OverflowError:
            raise TemplateSandboxError(f"the template builds a number too large for {operator!r}") from None
        return self.check_value(result, what)

    # ----------------------------------------------------------------------------- what may be read, called

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        return not attr.startswith("_")

    def getattr(self, obj: Any, attribute: str) -> Any:
        self.tick(0)
        if attribute.startswith("_"):
            raise TemplateSandboxError(
                f"the template reads the attribute {attribute!r}; the sandbox refuses "
                "names starting with '_' (Python internals such as __class__ or "
                "__globals__)"
            )
        if isinstance(obj, Undefined):
            return getattr(obj, attribute)  # an undefined name: Jinja's own error (or refusal) for it
        if isinstance(obj, Mapping):
            if attribute in obj:
                return obj[attribute]
            if attribute in _MAPPING_METHODS:
                return getattr(obj, attribute)
            return self.undefined(obj=obj, name=attribute)
        if isinstance(obj, LoopContext) and attribute in _LOOP_FIELDS:
            return getattr(obj, attribute)
        raise TemplateSandboxError(
            f"the template reads the attribute {attribute!r} of {_kind(obj)}; the "
            "sandbox reads attributes of mappings (their keys) and of 'loop' only"
        )

    def getitem(self, obj: Any, argument: Any) -> Any:
        self.tick(0)
        if isinstance(obj, Undefined):
            return obj[argument]
        if isinstance(argument, str) and not isinstance(obj, Mapping):
            return self.getattr(obj, argument)
        if isinstance(obj, Mapping | str | list | tuple | range):
            try:
                return obj[argument]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=argument)
        raise TemplateSandboxError(
            f"the template indexes {_kind(obj)}; the sandbox indexes strings, lists and mappings only"
        )

    def call(__self, __context: Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        owner = getattr(__obj, "__self__", None)
        name = getattr(__obj, "__name__", "")
        allowed = __obj == __self._range or (isinstance(owner, Mapping) and name in _MAPPING_METHODS)
        allowed = allowed or (isinstance(owner, LoopContext) and name in _LOOP_METHODS)
        if not allowed:
            raise TemplateSandboxError(
                f"the template calls {_kind(__obj)}; the sandbox calls only {', '.join(CALLS)}"
            )
        __self.tick(0)
        return __self.check_value(__context.call(__obj, *args, **kwargs), "a value with a call")

    def _range(self, *args: Any) -> range:
        if not all(isinstance(a, int) for a in args):
            raise TemplateSandboxError(f"the template calls range{args!r}; expected whole numbers")
        for a in args:
            self.check_bits(a.bit_length(), "a range bound")
        numbers = range(*args)
        if len(numbers) > MAX_RANGE:
            raise TemplateSandboxError(
                f"the template calls range{args!r}, {len(numbers):,} numbers; the "
                f"sandbox gives at most {MAX_RANGE:,}"
            )
        return numbers

    @pass_context
    def _loop_step(self, context: Context, iterable: Any) -> Iterator[Any]:
        for value in iterable:
            self.tick()
            yield value

    def _checked_filter(self, name: str, func: Callable[..., Any]) -> Callable[..., Any]:
        """``func`` with its arguments checked before it runs and its result after."""
        # the environment or eval context first
        skip = 0 if getattr(func, "jinja_pass_arg", None) is None else 1

        @functools.wraps(func)  # keeps Jinja's pass_environment / pass_eval_context mark
        def checked(*args: Any, **kwargs: Any) -> Any:
            self.tick(0)
            values = list(args)
            if name == "join" and len(values) > skip and not isinstance(values[skip], Undefined):
                # a lazy iterable: the check and the join see the same items
                values[skip] = list(values[skip])
            self._check_filter_args(name, values[skip:], kwargs)
            return self.check_value(func(*values, **kwargs), f"a value with |{name}")

        return checked

    def _check_filter_args(self, name: str, args: list[Any], kwargs: dict[str, Any]) -> None:
        """Refuse arguments whose result would break a limit, before the filter builds it."""
        what = f"a value with |{name}"
        width: Any = 0
        if name in ("indent", "tojson"):
            default = ("width", 4) if name == "indent" else ("indent", None)
            width = args[1] if len(args) > 1 else kwargs.get(*default)
            width = len(width) if isinstance(width, str) else width or 0
            if isinstance(width, bool) or not isinstance(width, int) or width > MAX_INDENT:
                raise TemplateSandboxError(
                    f"the template indents by {width!r}; the sandbox allows at most {MAX_INDENT} characters"
                )
        elif name == "round":
            precision = args[1] if len(args) > 1 else kwargs.get("precision", 0)
            if not isinstance(precision, int) or abs(precision) > 100:
                raise TemplateSandboxError(
                    f"the template rounds to {precision!r} digits; the sandbox allows -100 to 100"
                )
        if name not in _WRITES_TEXT or not args:
            return
        for extra in (*args[1:], *kwargs.values()):  # a separator, an ending ...
            self.check_size(self.weigh(extra), what)
        text, width = args[0], max(width, 0)
        if name == "join" and isinstance(text, list):
            sep = args[1] if len(args) > 1 else kwargs.get("d", "")
            size = self.weigh(text) + self.weigh(str(sep)) * max(len(text) - 1, 0)
        elif name == "indent":
            lines = text.count("\n") + 1 if isinstance(text, str) else self.weigh(text)
            size = self.weigh(text) + lines * width
        else:  # tojson's indentation counted, each other filter's text about as long as its input
            size = self.weigh(text, width if name == "tojson" else 0)
        self.check_size(size, what)
        self.charge(size, what)


def refusals(tree: nodes.Template, text: str) -> None:
    """Refuse, before anything renders, a construct the sandbox forbids anywhere in the template.

    A read of a private attribute is named first (it says most about what the template tries).
    """
    found: list[tuple[int, int, int, str]] = []  # (priority, line, order, rule)
    for node in tree.find_all(nodes.Node):
        rule: str | None = None
        priority = 1
        if isinstance(node, nodes.Getattr) and node.attr.startswith("_"):
            priority = 0
            rule = (
                f"reads the attribute {node.attr!r}; names starting with '_' are Python "
                "internals (__class__, __globals__ ...) and never readable"
            )
        elif isinstance(node, nodes.Filter) and node.name not in FILTERS:
            rule = f"uses the filter |{node.name}; the sandbox's filters are {', '.join(FILTERS)}"
        elif isinstance(node, nodes.Test) and node.name not in TESTS:
            rule = f"uses the test 'is {node.name}'; the sandbox's tests are {', '.join(TESTS)}"
        elif isinstance(node, nodes.Call) and not _allowed_call(node.node):
            rule = f"makes a call; the sandbox calls only {', '.join(CALLS)}"
        elif isinstance(node, nodes.Macro | nodes.CallBlock):
            rule = "defines or calls a macro; the sandbox has no macros"
        elif isinstance(node, _READS_OTHER_FILES):
            rule = "reads another template (extends, include or import); the sandbox reads no file"
        elif isinstance(node, nodes.For) and node.recursive:
            rule = "has a recursive loop; the sandbox has no recursion"
        if rule is not None:
            found.append((priority, getattr(node, "lineno", 0) or 0, len(found), rule))
    if found:
        _, lineno, _, rule = min(found)
        raise TemplateSandboxError(f"the template's Jinja at {_line(text, lineno)} was refused: it {rule}")


def _allowed_call(func: nodes.Expr) -> bool:
    if isinstance(func, nodes.Name):
        return func.name == "range"
    if isinstance(func, nodes.Getattr):
        if isinstance(func.node, nodes.Name) and func.node.name == "loop":
            return func.attr in _LOOP_METHODS
        return func.attr in _MAPPING_METHODS
    return False


def _count_loop_steps(tree: nodes.Template, env: jinja2.Environment) -> None:
    """Route every loop's iterable through the step counter."""
    for loop in list(tree.find_all(nodes.For)):
        loop.iter = nodes.Filter(loop.iter, _STEP_FILTER, [], [], None, None, lineno=loop.lineno)
        loop.iter.set_environment(env)


class SandboxedTemplate:
    """A Jinja template parsed in the sandbox (refusing every forbidden construct): its undeclared names,
    and :meth:`render`; ``undefined`` is the class of a name nobody gives."""

    def __init__(self, text: str, undefined: type[Undefined] = jinja2.StrictUndefined) -> None:
        from jinja2 import meta

        self.text = text
        self.env = _Sandbox(undefined)
        try:
            self.tree = self.env.parse(text)
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"expected a valid Jinja template; got a syntax error at line {exc.lineno}: {exc.message}"
            ) from None
        except RecursionError:
            raise TemplateSandboxError(
                "the template's Jinja is nested too deep to read (the sandbox reads a few hundred levels)"
            ) from None
        refusals(self.tree, text)
        self.names: set[str] = meta.find_undeclared_variables(self.tree) - set(self.env.globals)
        _count_loop_steps(self.tree, self.env)

    def render(self, context: Mapping[str, Any]) -> str:
        """The rendered text; TemplateSandboxError when it breaks a limit, TemplateError when it fails."""
        self.env.steps, self.env.built, self.env.started = 0, 0, time.thread_time()
        try:
            code = self.env.compile(self.tree)
            template = self.env.template_class.from_code(self.env, code, self.env.make_globals(None))
            out: list[str] = []
            size = 0
            for piece in template.generate(dict(context)):
                size += len(piece)
                if size > MAX_OUTPUT_CHARS:
                    raise TemplateSandboxError(
                        f"the template renders more than {MAX_OUTPUT_CHARS:,} "
                        "characters (the sandbox's bound on a rendered template)"
                    )
                out.append(piece)
            return "".join(out)
        except TemplateError:
            raise
        except jinja2.UndefinedError as exc:  # the undefined class's message says what was missing
            raise TemplateError(str(exc.message)) from None
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(
                f"expected a valid Jinja template; got an error at line {exc.lineno}: {exc.message}"
            ) from None
        except RecursionError:
            raise TemplateSandboxError("the template's Jinja is nested too deep to render") from None
        except MemoryError:
            raise TemplateSandboxError("the template's Jinja ran out of memory while rendering") from None
        except Exception as exc:
            raise TemplateError(
                f"the template's Jinja failed while rendering: {type(exc).__name__}: {exc}"
            ) from None
