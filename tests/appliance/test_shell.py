"""Every page keeps the way back: the 404 and 403 pages and the API docs have the header (home, log out), and the
menu names pages so they can be found (MTU under "Network & tuning", two kinds of schedules told apart)."""

LOG_OUT = '<form method="post" action="/logout/">'


def test_the_404_page_has_the_header_with_the_menu_and_log_out(admin_client, local_host):
    for url in ["/no-such-page/", "/pools/999999/"]:
        response = admin_client.get(url)
        page = response.content.decode()
        assert response.status_code == 404, url
        assert LOG_OUT in page and 'name="csrfmiddlewaretoken"' in page
        assert '<nav aria-label="Main" class="mainnav">' in page and 'href="/pools/"' in page
        assert "<h1>Not found</h1>" in page and 'href="/">dashboard</a>' in page


def test_the_403_page_has_the_header_and_says_why(viewer_client, local_host):
    response = viewer_client.get("/hosts/add/")  # admins only
    page = response.content.decode()
    assert response.status_code == 403
    assert LOG_OUT in page and "<h1>Not allowed</h1>" in page and "Your role does not allow this." in page


def test_anonymous_gets_a_404_page_without_the_header_and_a_way_to_log_in(client, db):
    page = client.get("/no-such-page/").content.decode()
    assert LOG_OUT not in page and 'href="/login/"' in page


def test_the_api_docs_have_a_bar_back_to_tarn_and_log_out(viewer_client):
    page = viewer_client.get("/api/v1/docs/").content.decode()
    assert '<header class="tarn-bar">' in page and 'href="/">← Tarn</a>' in page
    assert LOG_OUT in page and 'name="csrfmiddlewaretoken"' in page
    assert 'href="/account/tokens/"' in page and '<div id="swagger-ui"></div>' in page


def test_the_menu_says_network_and_tuning_and_the_page_agrees(viewer_client, local_host):
    dashboard = viewer_client.get("/").content.decode()
    assert '<a href="/tuning/">Network &amp; tuning</a>' in dashboard
    assert ">Tuning</a>" not in dashboard
    page = viewer_client.get("/tuning/").content.decode()
    assert "<title>Network &amp; tuning · Tarn</title>" in page
    assert "<h1>Network &amp; tuning <small" in page and "<h2>Network links, MTU, bridges, bonds and VLANs</h2>" in page
    assert '<a href="/tuning/" aria-current="page">Network &amp; tuning</a>' in page


def test_snapshot_and_benchmark_schedules_have_their_own_names(viewer_client, local_host):
    snapshots = viewer_client.get("/pools/schedules/").content.decode()
    assert "<title>Snapshot schedules · Tarn</title>" in snapshots and "<h1>Snapshot schedules" in snapshots
    assert 'aria-current="page">Snapshot schedules</a>' in snapshots and ">Schedules</a>" not in snapshots
    benchmarks = viewer_client.get("/benchmarks/schedules/").content.decode()
    assert "<title>Benchmark schedules · Tarn</title>" in benchmarks and "<h1>Benchmark schedules" in benchmarks
    assert ">Schedules</a>" not in viewer_client.get("/benchmarks/").content.decode()


def test_the_menu_groups_its_pages_and_marks_the_section_of_a_page_below_an_entry(admin_client, local_host):
    page = admin_client.get("/pools/disks/").content.decode()  # /pools/ is a prefix too: the longest entry wins
    assert '<summary aria-current="true">Storage</summary>' in page
    assert '<a href="/pools/disks/" aria-current="page">Disks</a>' in page and '<a href="/pools/">Pools</a>' in page
    page = admin_client.get("/hosts/add/").content.decode()  # below an entry: its section, not "this page"
    assert '<a href="/hosts/" aria-current="true">Hosts</a>' in page and 'aria-current="page"' not in page
    assert '<summary aria-current="true">System</summary>' in page
    page = admin_client.get("/").content.decode()  # "/" marks only itself, and Dashboard is a link, not a menu
    assert '<a href="/" aria-current="page">Dashboard</a>' in page and "<summary>Dashboard" not in page
    assert page.count('aria-current="true"') == 0 and page.count('<details class="menu">') == 5


def test_backups_are_in_the_menu_for_admins_only(admin_client, viewer_client, local_host):
    assert '<li><a href="/backups/">Backups</a></li>' in admin_client.get("/").content.decode()
    assert '<li><a href="/backups/">Backups</a></li>' not in viewer_client.get("/").content.decode()
