"""One way to send a file out of a snapshot, for the page and the API alike."""

from django.http import StreamingHttpResponse
from django.utils.http import content_disposition_header


def streamed(found) -> StreamingHttpResponse:
    """A file out of a snapshot as an attachment (never shown inline: its content is data), sent as it is read."""
    response = StreamingHttpResponse(found.chunks, content_type="application/octet-stream")
    response["Content-Length"] = str(found.size)
    response["Content-Disposition"] = content_disposition_header(True, found.name)
    return response
