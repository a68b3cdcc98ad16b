"""The API's JSON renderer: <, > and & written as \\u escapes, so archive text (kernel names,
code, error logs) can never be read as markup, even by a client that sniffs content."""
from rest_framework.renderers import JSONRenderer


class EscapedJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        body = super().render(data, accepted_media_type, renderer_context)
        return body.replace(b"<", b"\\u003c").replace(b">", b"\\u003e").replace(b"&", b"\\u0026")
