"""Parse the POSIX shell subset a container's ``sh -c`` script may use into a small syntax tree.

The grammar is the one of the POSIX Shell Command Language (XCU 2.10) restricted to what lab
manifests write: lists (``;``, ``&``, newlines), ``&&``/``||``, pipelines, ``!``, ``if``/``elif``/
``else``, ``for``, ``while``/``until``, ``{ }`` and ``( )`` groups, assignments, redirections
(``>``, ``>>``, ``<``, ``2>&1``, ``>&2``) and words with single/double quotes, backslashes, ``$name``,
``${name...}``, ``$(...)``, backquotes and ``$((...))``. ``case`` and function definitions are not
supported (a :class:`ShellSyntaxError` names what was found). Python's ``shlex`` only splits words; it
knows neither operators nor nested substitutions, hence this small recursive-descent parser.
"""
from __future__ import annotations

from dataclasses import dataclass, field

_METACHARS = set(" \t\n;&|()<>")


class ShellSyntaxError(Exception):
    """A script the parser rejects; ``str()`` follows dash: ``Syntax error: "fi" unexpected``."""


# --- syntax tree ------------------------------------------------------------
@dataclass
class Word:
    """Parts: ("lit", s) | ("sq", s) | ("dq", [parts]) | ("param", name, op, Word|None) | ("cmd", Seq) |
    ("arith", Word)."""

    parts: list = field(default_factory=list)

    @property
    def literal(self) -> str | None:
        """The text of a word made only of unquoted literal characters (keywords, assignments)."""
        if all(p[0] == "lit" for p in self.parts):
            return "".join(p[1] for p in self.parts)
        return None


@dataclass
class Redirect:
    fd: int
    op: str          # ">", ">>", "<", ">&", "<&"
    target: Word


@dataclass
class Simple:
    assigns: list[tuple[str, Word]]
    words: list[Word]
    redirects: list[Redirect]
    line: int


@dataclass
class Pipeline:
    commands: list
    negate: bool = False


@dataclass
class AndOr:
    first: Pipeline
    rest: list[tuple[str, Pipeline]]


@dataclass
class Seq:
    items: list[AndOr]


@dataclass
class If:
    branches: list[tuple[Seq, Seq]]
    otherwise: Seq | None
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Loop:
    until: bool
    condition: Seq
    body: Seq
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class For:
    name: str
    words: list[Word] | None
    body: Seq
    redirects: list[Redirect] = field(default_factory=list)


@dataclass
class Group:
    body: Seq
    subshell: bool
    redirects: list[Redirect] = field(default_factory=list)


# --- parser -----------------------------------------------------------------
@dataclass
class _Tok:
    kind: str            # "word", "op", "redir", "eof"
    value: object = None
    line: int = 1


class Parser:
    def __init__(self, src: str, pos: int = 0, line: int = 1):
        self.s = src
        self.i = pos
        self.line = line
        self._peeked: _Tok | None = None

    # --- characters ---------------------------------------------------------
    def _ch(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def _skip_blanks(self) -> None:
        while True:
            c = self._ch()
            if c in (" ", "\t"):
                self.i += 1
            elif c == "\\" and self._ch(1) == "\n":
                self.i += 2
                self.line += 1
            elif c == "#":
                while self._ch() not in ("", "\n"):
                    self.i += 1
            else:
                return

    # --- tokens -------------------------------------------------------------
    def peek(self) -> _Tok:
        if self._peeked is None:
            self._peeked = self._read_token()
        return self._peeked

    def take(self) -> _Tok:
        tok = self.peek()
        self._peeked = None
        return tok

    def _read_token(self) -> _Tok:
        self._skip_blanks()
        c, line = self._ch(), self.line
        if c == "":
            return _Tok("eof", None, line)
        if c == "\n":
            self.i += 1
            self.line += 1
            return _Tok("op", "\n", line)
        for op in ("&&", "||", ";;", ">>", ">&", "<&", ";", "&", "|", "(", ")", ">", "<"):
            if self.s.startswith(op, self.i):
                self.i += len(op)
                if op in (">>", ">&", "<&", ">", "<"):
                    return _Tok("redir", (1 if op[0] == ">" else 0, op), line)
                return _Tok("op", op, line)
        start = self.i
        while self._ch().isdigit():
            self.i += 1
        if self.i > start and self._ch() in ("<", ">"):
            fd = int(self.s[start:self.i])
            for op in (">>", ">&", "<&", ">", "<"):
                if self.s.startswith(op, self.i):
                    self.i += len(op)
                    return _Tok("redir", (fd, op), line)
        self.i = start
        return _Tok("word", self._read_word(), line)

    def _read_word(self, stop_at_meta: bool = True) -> Word:
        parts: list = []
        buf: list[str] = []

        def flush() -> None:
            if buf:
                parts.append(("lit", "".join(buf)))
                buf.clear()

        while True:
            c = self._ch()
            if c == "" or (stop_at_meta and c in _METACHARS):
                break
            if c == "\\":
                nxt = self._ch(1)
                self.i += 2
                if nxt == "\n":
                    self.line += 1
                    continue
                flush()
                parts.append(("sq", nxt))
            elif c == "'":
                end = self.s.find("'", self.i + 1)
                if end < 0:
                    raise ShellSyntaxError("Syntax error: Unterminated quoted string")
                flush()
                text = self.s[self.i + 1:end]
                self.line += text.count("\n")
                parts.append(("sq", text))
                self.i = end + 1
            elif c == '"':
                flush()
                self.i += 1
                parts.append(("dq", self._read_double_quoted()))
            elif c == "$" or c == "`":
                flush()
                parts.append(self._read_dollar())
            else:
                buf.append(c)
                self.i += 1
        flush()
        return Word(parts)

    def _read_double_quoted(self) -> list:
        parts: list = []
        buf: list[str] = []
        while True:
            c = self._ch()
            if c == "":
                raise ShellSyntaxError("Syntax error: Unterminated quoted string")
            if c == '"':
                self.i += 1
                break
            if c == "\\" and self._ch(1) in ('"', "\\", "$", "`", "\n"):
                if self._ch(1) != "\n":
                    buf.append(self._ch(1))
                self.i += 2
            elif c in ("$", "`"):
                if buf:
                    parts.append(("lit", "".join(buf)))
                    buf = []
                parts.append(self._read_dollar())
            else:
                if c == "\n":
                    self.line += 1
                buf.append(c)
                self.i += 1
        if buf:
            parts.append(("lit", "".join(buf)))
        return parts

    def _read_dollar(self) -> tuple:
        if self._ch() == "`":
            end = self.s.find("`", self.i + 1)
            if end < 0:
                raise ShellSyntaxError('Syntax error: EOF in backquote substitution')
            inner = self.s[self.i + 1:end]
            self.i = end + 1
            return ("cmd", Parser(inner).parse_script())
        self.i += 1  # "$"
        c = self._ch()
        if c == "(" and self._ch(1) == "(":
            depth, j = 0, self.i + 2
            while j < len(self.s):
                if self.s[j] == "(":
                    depth += 1
                elif self.s[j] == ")":
                    if depth == 0 and self.s[j + 1:j + 2] == ")":
                        break
                    depth -= 1
                j += 1
            else:
                raise ShellSyntaxError("Syntax error: Missing '))'")
            expr = Parser(self.s[self.i + 2:j])._read_arith_word()
            self.i = j + 2
            return ("arith", expr)
        if c == "(":
            self.i += 1
            sub = Parser(self.s, self.i, self.line)
            seq = sub.parse_list(("",), closing=")")
            if sub.peek().kind != "op" or sub.peek().value != ")":
                raise ShellSyntaxError('Syntax error: end of file unexpected (expecting ")")')
            sub.take()
            self.i, self.line = sub.i, sub.line
            return ("cmd", seq)
        if c == "{":
            end = self.s.find("}", self.i)
            if end < 0:
                raise ShellSyntaxError("Syntax error: Missing '}'")
            body = self.s[self.i + 1:end]
            self.i = end + 1
            return _parse_braced(body)
        if c and (c.isalpha() or c == "_"):
            j = self.i
            while j < len(self.s) and (self.s[j].isalnum() or self.s[j] == "_"):
                j += 1
            name = self.s[self.i:j]
            self.i = j
            return ("param", name, "", None)
        if c and c in "?#@*$!0123456789-":
            self.i += 1
            return ("param", c, "", None)
        return ("lit", "$")

    def _read_arith_word(self) -> Word:
        """An arithmetic expression: parameter expansions and substitutions inside, the rest literal."""
        parts: list = []
        buf: list[str] = []
        while self._ch():
            if self._ch() in ("$", "`"):
                if buf:
                    parts.append(("lit", "".join(buf)))
                    buf = []
                parts.append(self._read_dollar())
            else:
                buf.append(self._ch())
                self.i += 1
        if buf:
            parts.append(("lit", "".join(buf)))
        return Word(parts)

    # --- grammar ------------------------------------------------------------
    def parse_script(self) -> Seq:
        seq = self.parse_list(("",))
        tok = self.peek()
        if tok.kind != "eof":
            raise ShellSyntaxError(f'Syntax error: "{_describe(tok)}" unexpected')
        return seq

    def _at_keyword(self, words: tuple[str, ...]) -> bool:
        tok = self.peek()
        return tok.kind == "word" and tok.value.literal in words

    def parse_list(self, stop_words: tuple[str, ...], closing: str | None = None) -> Seq:
        items: list[AndOr] = []
        while True:
            while self.peek().kind == "op" and self.peek().value in ("\n", ";"):
                self.take()
            tok = self.peek()
            if tok.kind == "eof" or self._at_keyword(stop_words) or (tok.kind == "op" and tok.value == closing):
                return Seq(items)
            items.append(self._and_or())
            tok = self.peek()
            if tok.kind == "op" and tok.value in ("\n", ";", "&"):
                self.take()
                continue
            if tok.kind == "eof" or self._at_keyword(stop_words) or (tok.kind == "op" and tok.value == closing):
                return Seq(items)
            raise ShellSyntaxError(f'Syntax error: "{_describe(tok)}" unexpected')

    def _and_or(self) -> AndOr:
        first = self._pipeline()
        rest = []
        while self.peek().kind == "op" and self.peek().value in ("&&", "||"):
            op = self.take().value
            while self.peek().kind == "op" and self.peek().value == "\n":
                self.take()
            rest.append((op, self._pipeline()))
        return AndOr(first, rest)

    def _pipeline(self) -> Pipeline:
        negate = False
        if self._at_keyword(("!",)):
            self.take()
            negate = True
        commands = [self._command()]
        while self.peek().kind == "op" and self.peek().value == "|":
            self.take()
            while self.peek().kind == "op" and self.peek().value == "\n":
                self.take()
            commands.append(self._command())
        return Pipeline(commands, negate)

    def _expect_word(self, word: str) -> None:
        tok = self.take()
        if tok.kind != "word" or tok.value.literal != word:
            got = "end of file" if tok.kind == "eof" else f'"{_describe(tok)}"'
            raise ShellSyntaxError(f'Syntax error: {got} unexpected (expecting "{word}")')

    def _command(self):
        tok = self.peek()
        if tok.kind == "op" and tok.value == "(":
            self.take()
            body = self.parse_list(("",), closing=")")
            if self.take().value != ")":
                raise ShellSyntaxError('Syntax error: end of file unexpected (expecting ")")')
            return Group(body, True, self._trailing_redirects())
        if tok.kind == "word":
            word = tok.value.literal
            if word == "{":
                self.take()
                body = self.parse_list(("}",))
                self._expect_word("}")
                return Group(body, False, self._trailing_redirects())
            if word == "if":
                return self._if()
            if word in ("while", "until"):
                self.take()
                cond = self.parse_list(("do",))
                self._expect_word("do")
                body = self.parse_list(("done",))
                self._expect_word("done")
                return Loop(word == "until", cond, body, self._trailing_redirects())
            if word == "for":
                return self._for()
            if word in ("case", "esac"):
                raise ShellSyntaxError(f'Syntax error: "{word}" is not supported by the node agent\'s shell')
            if word in ("then", "elif", "else", "fi", "do", "done", "}", "in"):
                raise ShellSyntaxError(f'Syntax error: "{word}" unexpected')
        return self._simple()

    def _if(self) -> If:
        self.take()
        branches = []
        while True:
            cond = self.parse_list(("then",))
            self._expect_word("then")
            body = self.parse_list(("elif", "else", "fi"))
            branches.append((cond, body))
            tok = self.take()
            kw = tok.value.literal if tok.kind == "word" else None
            if kw not in ("elif", "else", "fi"):
                got = "end of file" if tok.kind == "eof" else f'"{_describe(tok)}"'
                raise ShellSyntaxError(f'Syntax error: {got} unexpected (expecting "fi")')
            if kw == "elif":
                continue
            otherwise = None
            if kw == "else":
                otherwise = self.parse_list(("fi",))
                self._expect_word("fi")
            return If(branches, otherwise, self._trailing_redirects())

    def _for(self) -> For:
        self.take()
        name_tok = self.take()
        name = name_tok.value.literal if name_tok.kind == "word" else None
        if not name or not (name[0].isalpha() or name[0] == "_") or not name.replace("_", "a").isalnum():
            raise ShellSyntaxError("Syntax error: Bad for loop variable")
        while self.peek().kind == "op" and self.peek().value == "\n":
            self.take()
        words = None
        if self._at_keyword(("in",)):
            self.take()
            words = []
            while self.peek().kind == "word":
                words.append(self.take().value)
        while self.peek().kind == "op" and self.peek().value in (";", "\n"):
            self.take()
        self._expect_word("do")
        body = self.parse_list(("done",))
        self._expect_word("done")
        return For(name, words, body, self._trailing_redirects())

    def _trailing_redirects(self) -> list[Redirect]:
        redirects = []
        while self.peek().kind == "redir":
            redirects.append(self._redirect())
        return redirects

    def _redirect(self) -> Redirect:
        fd, op = self.take().value
        tok = self.take()
        if tok.kind != "word":
            raise ShellSyntaxError(f'Syntax error: {"end of file" if tok.kind == "eof" else repr(tok.value)} '
                                   f'unexpected')
        return Redirect(fd, op, tok.value)

    def _simple(self) -> Simple:
        assigns: list[tuple[str, Word]] = []
        words: list[Word] = []
        redirects: list[Redirect] = []
        line = self.peek().line
        while True:
            tok = self.peek()
            if tok.kind == "redir":
                redirects.append(self._redirect())
            elif tok.kind == "word":
                word = self.take().value
                name = _assignment_name(word) if not words else None
                if name is not None:
                    assigns.append((name, _assignment_value(word)))
                else:
                    words.append(word)
            else:
                break
        if not assigns and not words and not redirects:
            raise ShellSyntaxError(f'Syntax error: "{_describe(self.peek())}" unexpected')
        return Simple(assigns, words, redirects, line)


def _describe(tok: _Tok) -> str:
    if tok.kind == "eof":
        return "end of file"
    if tok.kind == "op":
        return "newline" if tok.value == "\n" else tok.value
    if tok.kind == "redir":
        return tok.value[1]
    return tok.value.literal or "word"


def _assignment_name(word: Word) -> str | None:
    if not word.parts or word.parts[0][0] != "lit":
        return None
    head = word.parts[0][1]
    name, eq, _ = head.partition("=")
    if not eq or not name or not (name[0].isalpha() or name[0] == "_"):
        return None
    return name if name.replace("_", "a").isalnum() else None


def _assignment_value(word: Word) -> Word:
    head = word.parts[0][1]
    value = head.partition("=")[2]
    return Word(([("lit", value)] if value else []) + word.parts[1:])


def _parse_braced(body: str) -> tuple:
    """``${name}``, ``${#name}``, ``${name:-word}`` and the other POSIX operators."""
    if body.startswith("#") and len(body) > 1:
        return ("param", body[1:], "#", None)
    j = 0
    while j < len(body) and (body[j].isalnum() or body[j] == "_"):
        j += 1
    if j == 0 and body[:1] in ("?", "#", "@", "*", "$", "!", "-"):
        j = 1
    name, rest = body[:j], body[j:]
    if not name:
        raise ShellSyntaxError(f"${{{body}}}: Bad substitution")
    for op in (":-", ":=", ":+", ":?", "-", "=", "+", "?", "%%", "%", "##", "#"):
        if rest.startswith(op):
            return ("param", name, op, Parser(rest[len(op):])._read_word(stop_at_meta=False))
    if rest:
        raise ShellSyntaxError(f"${{{body}}}: Bad substitution")
    return ("param", name, "", None)
