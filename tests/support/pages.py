"""A form a page shows again after refusing it: the response is a 400 (never a redirect with a toast over a folded
page), and the part of the page from the element with that id to its end, where the errors must be."""


def shown_again(response, element_id: str, end: str = "</form>") -> str:
    assert response.status_code == 400, response.status_code
    html = response.content.decode()
    start = html.index(f'id="{element_id}"')
    return html[start : html.index(end, start)]
