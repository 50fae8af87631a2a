"""Wrap lines over 110 columns in Python files without changing what the code does (each step AST-checked).

Usage: ``python .ci/wrap_long_lines.py FILE...`` (prints the lines it could not wrap; wrap those by hand).
For a branch that brings long lines back: run it on the files ``ruff check --select E501`` names, then
``ruff check --fix`` (import order) and ``mypy`` (a ``type: ignore`` stays on the line it was on).

Code lines break after the last comma (or before `and`/`or`/`if`/`else`/`for`/`+`) inside brackets that
leaves the first part within the limit, continuing under the innermost open bracket (visual indent) or
four columns in (hanging bracket); a string literal that crosses the limit inside brackets is split in
two adjacent literals at a space (outside brackets it is parenthesised first); a trailing comment moves
above its line (a pragma stays); comments and docstring lines wrap at a space. Other long strings
(data) are left and reported.
"""

from __future__ import annotations

import ast
import io
import re
import sys
import textwrap
import tokenize

LIMIT = 110
BREAK_BEFORE = {"and", "or", "if", "else", "for", "+"}
PRAGMA = re.compile(r"^#\s*(noqa|type:\s*ignore|pragma)")


def _norm(tree: ast.AST) -> str:
    for node in ast.walk(tree):  # docstrings (of modules, classes, functions and attributes) up to whitespace
        if isinstance(node, ast.Expr) and isinstance(node.value,
                                                     ast.Constant) and isinstance(node.value.value, str):
            node.value.value = " ".join(node.value.value.split())
    return ast.dump(tree)


def _tokens(src: str) -> list[tokenize.TokenInfo]:
    return list(tokenize.generate_tokens(io.StringIO(src).readline))


def _analyse(toks: list[tokenize.TokenInfo]) -> tuple[list[list[tuple[int, int, bool, int]]], set[int]]:
    """Per token index, the open-bracket stack before it as (row, col, hanging, line indent); docstring token
    ids."""
    stack: list[tuple[int, int, bool, int]] = []
    before = []
    docs = set()
    prev_sig = tokenize.NEWLINE
    for i, t in enumerate(toks):
        before.append(list(stack))
        if t.type == tokenize.OP and t.string in "([{":
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            hanging = nxt is not None and nxt.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT)
            indent = len(t.line) - len(t.line.lstrip())
            stack.append((t.start[0], t.start[1], hanging, indent))
        elif t.type == tokenize.OP and t.string in ")]}":
            if stack:
                stack.pop()
        if t.type == tokenize.STRING and prev_sig in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT,
                                                      tokenize.ENCODING, tokenize.NL):
            nxt = next((u for u in toks[i + 1:] if u.type not in (tokenize.COMMENT,)), None)
            if nxt is not None and nxt.type in (tokenize.NEWLINE, tokenize.ENDMARKER):
                docs.add(i)
        if t.type not in (tokenize.COMMENT, tokenize.NL):
            prev_sig = t.type
    return before, docs


def _indent_for(stack: list[tuple[int, int, bool, int]]) -> int:
    row, col, hanging, line_indent = stack[-1]
    return line_indent + 4 if hanging else col + 1


def _parts(tok: str) -> tuple[str, str, str] | None:
    """A one-line literal's prefix, quote and body; None for a triple-quoted one."""
    m = re.match(r"""([rRbBfFuU]*)('\'\'|\"\"\"|'|")""", tok)
    if not m or m.group(2) in ("\'\'\'", '"""'):
        return None
    prefix, quote = m.group(1), m.group(2)
    return prefix, quote, tok[len(prefix) + len(quote):-len(quote)]


PLACEHOLDER = re.compile(r"(?<!\{)\{(?!\{)")


def _last_space(body: str, is_f: bool, limit: int, min_tail: int = 0) -> int | None:
    """Where the last space of ``body`` before ``limit`` ends, outside an f-string field."""
    best, depth, k = None, 0, 0
    while k < len(body):
        ch = body[k]
        if is_f and ch in "{}":
            if k + 1 < len(body) and body[k + 1] == ch:
                k += 2
                continue
            depth += 1 if ch == "{" else -1
        elif (ch == " " and depth == 0 and 8 < k < limit and body[k - 1] != "\\"
              and len(body) - (k + 1) >= min_tail):
            best = k + 1
        k += 1
    return best


def _literal(prefix: str, quote: str, part: str) -> str:
    """``part`` as a literal with ``prefix``; an f-string part without a field loses its ``f``."""
    if "f" in prefix.lower() and not PLACEHOLDER.search(part.replace("{{", "")):
        prefix = prefix.replace("f", "").replace("F", "")
        part = part.replace("{{", "{").replace("}}", "}")
    return f"{prefix}{quote}{part}{quote}"


def _split_string(tok: str, room: int) -> tuple[str, str] | None:
    """``tok`` (a one-line literal) as two literals, the first at most ``room`` columns, split at a space."""
    parts = _parts(tok)
    if parts is None:
        return None
    prefix, quote, body = parts
    best = _last_space(body, "f" in prefix.lower(), room - len(prefix) - 2 * len(quote) + 1, min_tail=12)
    if best is None:
        return None
    return _literal(prefix, quote, body[:best]), _literal(prefix, quote, body[best:])


def _carry(tok: str, nxt: str, room: int) -> tuple[str, str] | None:
    """``tok``'s words past ``room`` columns moved to the front of the literal ``nxt`` (same quotes)."""
    a, b = _parts(tok), _parts(nxt)
    if a is None or b is None or a[1] != b[1] or any(c in (a[0] + b[0]).lower() for c in "br"):
        return None
    (pa, q, body), (pb, _, body_b) = a, b
    fa, fb = "f" in pa.lower(), "f" in pb.lower()
    best = _last_space(body, fa, room - len(pa) - 2 * len(q))
    if best is None:
        return None
    keep, moved = body[:best], body[best:]
    if fa and not fb:
        if PLACEHOLDER.search(moved.replace("{{", "")):
            return None
        moved = moved.replace("{{", "{").replace("}}", "}")
    elif fb and not fa:
        moved = moved.replace("{", "{{").replace("}", "}}")
    return _literal(pa, q, keep), f"{pb}{q}{moved}{body_b}{q}"


def fix_once(src: str, skip: set[str]) -> str | None:
    lines = src.splitlines(keepends=True)
    toks = _tokens(src)
    before, docs = _analyse(toks)
    by_row: dict[int, list[int]] = {}
    for i, t in enumerate(toks):
        for r in range(t.start[0], t.end[0] + 1):
            by_row.setdefault(r, []).append(i)
    for ln, line in enumerate(lines, 1):
        text = line.rstrip("\n")
        if len(text) <= LIMIT or text in skip:
            continue
        ids = by_row.get(ln, [])
        multi = [i for i in ids if toks[i].type == tokenize.STRING
                 and (toks[i].start[0] != toks[i].end[0] or i in docs)]
        if multi:
            i = multi[0]
            if i in docs and not text.rstrip().endswith("\\"):
                indent = len(text) - len(text.lstrip())
                stripped = text.lstrip()
                extra = 2 if re.match(r"[-*] ", stripped) else 0
                if toks[i].start[0] == ln:
                    indent = toks[i].start[1]
                cut = text.rfind(" ", indent + 10, LIMIT + 1)
                if cut > 0 and text[cut + 1:].strip():
                    new = text[:cut].rstrip() + "\n" + " " * (indent + extra) + text[cut + 1:].lstrip() + "\n"
                    lines[ln - 1] = new
                    return "".join(lines)
            skip.add(text)
            continue
        own = [i for i in ids if toks[i].start[0] == ln]
        comments = [i for i in own if toks[i].type == tokenize.COMMENT]
        code_toks = [i for i in own if toks[i].type not in (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE,
                                                              tokenize.INDENT, tokenize.DEDENT)]
        indent = len(text) - len(text.lstrip())
        if comments and not code_toks:  # a comment line
            c = toks[comments[0]]
            if PRAGMA.match(c.string):
                skip.add(text)
                continue
            body = c.string[1:].strip()
            wrapped = textwrap.wrap(body, LIMIT - indent - 2, break_long_words=False, break_on_hyphens=False)
            if len(wrapped) > 1 and all(len(w) + indent + 2 <= LIMIT for w in wrapped):
                lines[ln - 1] = "".join(" " * indent + "# " + w + "\n" for w in wrapped)
                return "".join(lines)
            skip.add(text)
            continue
        if comments:
            c = toks[comments[0]]
            code = text[:c.start[1]].rstrip()
            comment = c.string
            m = re.match(r"(#\s*(?:noqa(?::\s*[A-Z]+\d+(?:,\s*[A-Z]+\d+)*)?|type:\s*ignore(?:\[[^\]]*\])?))"
                         r"\s*(?:[-:]\s*)?(.*)$", comment)
            if m:
                m_reason = m.group(2).strip()
                reason = None if not m_reason else ("# " + m_reason.lstrip("# ").strip())
                pragma = m.group(1)
                if reason is not None and len(code) + 2 + len(pragma) <= LIMIT:
                    lines[ln - 1] = " " * indent + reason + "\n" + code + "  " + pragma + "\n"
                    return "".join(lines)
            if m or PRAGMA.match(comment):
                pass  # a pragma stays on its line: break the code instead
            else:
                lines[ln - 1] = " " * indent + comment + "\n" + code + "\n"
                return "".join(lines)
        if text.rstrip().endswith("\\"):
            skip.add(text)
            continue
        # break the code after a comma (or before a keyword) inside brackets
        cands = []
        for i in code_toks:
            t = toks[i]
            stack_after = before[i + 1] if i + 1 < len(before) else []
            if t.type == tokenize.OP and t.string == "," and stack_after and t.end[1] <= LIMIT:
                rest = text[t.end[1]:].lstrip()
                if rest and not rest.startswith("#") and rest[0] not in ")]}":
                    cands.append((t.end[1], _indent_for(stack_after), len(stack_after)))
            if t.string in BREAK_BEFORE and before[i] and t.start[1] - 1 <= LIMIT and t.start[1] > indent + 4:
                if t.type == tokenize.OP or t.type == tokenize.NAME:
                    cands.append((t.start[1], _indent_for(before[i]), len(before[i])))
        good = [(col, ind, depth) for col, ind, depth in cands
                if len(text[:col].rstrip()) <= LIMIT and ind + len(text[col:].lstrip()) < len(text)
                and col > ind]
        if good:
            shallow = min(d for _, _, d in good)
            col, ind, _ = max(g for g in good if g[2] == shallow)
            lines[ln - 1] = text[:col].rstrip() + "\n" + " " * ind + text[col:].lstrip() + "\n"
            return "".join(lines)
        # a statement whose break points lie outside brackets: parenthesise its expression
        starts_stmt = code_toks and not before[code_toks[0]] and toks[code_toks[0]].start[1] == indent
        ends_stmt = any(toks[i].type == tokenize.NEWLINE and toks[i].start[0] == ln for i in ids)
        if starts_stmt and ends_stmt:
            first = toks[code_toks[0]]
            expr_start = None
            if first.string in ("assert", "return") and len(code_toks) > 1:
                expr_start = toks[code_toks[1]].start[1]
            else:
                eq = [i for i in code_toks if toks[i].type == tokenize.OP and toks[i].string == "="
                      and not before[i]]
                if eq and eq[0] + 1 < len(toks):
                    expr_start = toks[eq[0] + 1].start[1]
            top_commas = [i for i in code_toks if toks[i].string == "," and not before[i]
                          and toks[i].start[1] > (expr_start or 0)]
            has_break = any(toks[i].string in BREAK_BEFORE and not before[i]
                            and toks[i].start[1] > (expr_start or 0)
                            for i in code_toks)
            bare = expr_start is not None and not text[expr_start:].startswith("(")
            if bare and has_break and not top_commas:
                end = len(text.rstrip())
                if comments:
                    end = len(text[:toks[comments[0]].start[1]].rstrip())
                new_line = text[:expr_start] + "(" + text[expr_start:end] + ")" + text[end:] + "\n"
                lines[ln - 1] = new_line
                return "".join(lines)
        # carry the overflow of a string literal ending the line into the literal starting the next line
        for i in code_toks:
            t = toks[i]
            if t.type != tokenize.STRING or i in docs or not (t.start[1] < LIMIT < t.end[1]):
                continue
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if nxt is None or nxt.type != tokenize.NL:
                continue
            j = i + 2
            if j >= len(toks) or toks[j].type != tokenize.STRING or toks[j].start[0] != ln + 1:
                continue
            u = toks[j]
            carried = _carry(t.string, u.string, LIMIT - t.start[1])
            if carried is None:
                continue
            nxt_line = lines[ln].rstrip("\n")
            lines[ln - 1] = text[:t.start[1]] + carried[0] + text[t.end[1]:] + "\n"
            lines[ln] = nxt_line[:u.start[1]] + carried[1] + nxt_line[u.end[1]:] + "\n"
            return "".join(lines)
        # split a string literal crossing the limit (or ending just before it, with the call's closing text)
        for i in code_toks:
            t = toks[i]
            if t.type != tokenize.STRING or i in docs or not (t.start[1] < LIMIT - 15
                                                              and t.end[1] > LIMIT - 25):
                continue
            stack = before[i]
            parts = _split_string(t.string, LIMIT - t.start[1])
            if parts is None:
                continue
            if stack:
                ind = t.start[1] if t.start[1] <= 70 else _indent_for(stack)
                new = text[:t.start[1]] + parts[0] + "\n" + " " * ind + parts[1] + text[t.end[1]:] + "\n"
            else:
                parts = _split_string(t.string, LIMIT - t.start[1] - 1)
                if parts is None:
                    continue
                new = (text[:t.start[1]] + "(" + parts[0] + "\n" + " " * (t.start[1] + 1) + parts[1] + ")"
                       + text[t.end[1]:] + "\n")
            lines[ln - 1] = new
            return "".join(lines)
        # last resort: turn the bracket the line hangs from (or its first open bracket) into a hanging one
        target = None
        if code_toks and before[code_toks[0]]:
            target = before[code_toks[0]][-1]
        else:
            for i in code_toks:
                t = toks[i]
                if t.type == tokenize.OP and t.string in "([{" and i + 1 < len(toks) \
                        and toks[i + 1].start[0] == ln and t.end[1] < LIMIT - 10:
                    target = (t.start[0], t.start[1], False, indent)
                    break
        if target is not None:
            row_b, col_b, hanging, indent_b = target
            if not hanging:
                head = lines[row_b - 1].rstrip("\n")
                lead = head.lstrip()
                hang = indent_b + (8 if lead.startswith(("def ", "async def ", "class ")) else 4)
                shift = col_b + 1 - hang
                body_ok = all(len(lines[r - 1]) - len(lines[r - 1].lstrip(" ")) >= col_b + 1
                              or not lines[r - 1].strip() for r in range(row_b + 1, ln + 1))
                is_def = lead.startswith(("def ", "async def "))
                if is_def and shift > 0 and head[col_b + 1:].strip() and body_ok:
                    lines[row_b - 1] = head[:col_b + 1] + "\n" + " " * hang + head[col_b + 1:].lstrip() + "\n"
                    for r in range(row_b + 1, ln + 1):
                        if lines[r - 1].strip():
                            spaces = len(lines[r - 1]) - len(lines[r - 1].lstrip(" "))
                            aligned = spaces <= col_b + 2  # an aligned line lands on the hang
                            cut = spaces if aligned else shift
                            lines[r - 1] = " " * (hang if aligned else 0) + lines[r - 1][cut:]
                    return "".join(lines)
        skip.add(text)
    return None


def fix_file(path: str) -> list[str]:
    src = open(path).read()
    want = _norm(ast.parse(src))
    skip: set[str] = set()
    for _ in range(20000):
        new = fix_once(src, skip)
        if new is None:
            break
        try:
            ok = _norm(ast.parse(new)) == want
        except SyntaxError:
            ok = False
        if not ok:
            # undo: remember the first long line that changed as unfixable
            old_lines, new_lines = src.splitlines(), new.splitlines()
            for a, b in zip(old_lines, new_lines, strict=False):
                if a != b:
                    skip.add(a)
                    break
            continue
        src = new
    open(path, "w").write(src)
    return [f"{path}:{n}: {len(line)}" for n, line in enumerate(src.splitlines(), 1) if len(line) > LIMIT]


if __name__ == "__main__":
    left = []
    for p in sys.argv[1:]:
        left += fix_file(p)
    print("\n".join(left))
    print(f"{len(left)} lines left over {LIMIT}", file=sys.stderr)
