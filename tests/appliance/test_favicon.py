"""/favicon.ico exists for anyone (browsers ask for it before anyone signs in) and every page links its icon."""


def test_the_favicon_is_served_without_login(client, db):
    response = client.get("/favicon.ico")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(response.streaming_content)


def test_every_page_links_the_icon_in_its_head(client, db):
    page = client.get("/login/").content.decode()
    head = page.split("</head>")[0]
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in head
