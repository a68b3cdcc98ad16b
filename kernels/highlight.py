"""Source code as highlighted HTML, with a numbered anchor per line.

Pygments escapes every token it emits, so its output is safe to mark safe: the archive
text inside it is already escaped. Nothing else in the project marks archive text safe.
"""
from django.utils.safestring import SafeString, mark_safe
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import CudaLexer, DiffLexer, PythonLexer

from .models import Kernel

# Pages link to a line as #L-<n> (kernel code) or #R-<n> (the task's reference).
KERNEL_LINE_PREFIX = "L"
REFERENCE_LINE_PREFIX = "R"


def _formatter(line_prefix: str) -> HtmlFormatter:
    # Inline line numbers inside a span per line: the span carries the anchor (id L-12)
    # so `:target` can mark the linked line; CSS keeps the numbers out of copied text.
    return HtmlFormatter(linenos="inline", linespans=line_prefix, cssclass="highlight", wrapcode=True)


def kernel_source_html(kernel: Kernel) -> SafeString:
    return mark_safe(highlight(kernel.code, kernel_lexer(kernel), _formatter(KERNEL_LINE_PREFIX)))


def kernel_lexer(kernel: Kernel):
    # stripnl=False: pygments drops leading blank lines by default, which would shift every
    # line anchor (#L-12) away from the line numbers compilers and clang-tidy report.
    return PythonLexer(stripnl=False) if kernel.kind == Kernel.Kind.MODEL_NEW else CudaLexer(stripnl=False)


def python_source_html(code: str, line_prefix: str = REFERENCE_LINE_PREFIX) -> SafeString:
    return mark_safe(highlight(code, PythonLexer(stripnl=False), _formatter(line_prefix)))


def diff_html(unified_diff: str) -> SafeString:
    return mark_safe(highlight(unified_diff, DiffLexer(), HtmlFormatter(cssclass="highlight diff", wrapcode=True)))


def stylesheet() -> str:
    """The CSS static/css/pygments.css was written from (kept to regenerate it)."""
    return HtmlFormatter(style="default").get_style_defs(".highlight")
