"""The API docs group paths by the app that answers them, each group described, under a description of Tarn today."""

from django.apps import apps

from tests.support.apps import product_apps


def _schema(client) -> dict:
    return client.get("/api/v1/schema/", headers={"Accept": "application/json"}).json()


def test_every_path_is_tagged_with_its_apps_name_and_every_app_with_an_api_has_a_described_tag(viewer_client):
    schema = _schema(viewer_client)
    tags = {t["name"]: t["description"] for t in schema["tags"]}
    with_api = [app for app in product_apps() if _has_api(app)]
    assert len(with_api) >= 10
    for app in with_api:
        name = str(apps.get_app_config(app).verbose_name)
        assert len(tags.get(name, "")) > 20, f"{app}: no described tag {name}"
    for path, item in schema["paths"].items():
        for method, op in item.items():
            assert len(op["tags"]) == 1 and op["tags"][0] in tags, (method, path, op["tags"])
    assert "api" not in tags
    assert {op["tags"][0] for op in schema["paths"]["/api/v1/datasets/"].values()} == {"Pools"}
    assert {op["tags"][0] for op in schema["paths"]["/api/v1/hosts/"].values()} == {"Core"}


def test_the_description_names_what_tarn_does_now(viewer_client):
    info = _schema(viewer_client)["info"]["description"]
    for word in ["replication", "encryption", "backups", "disk health", "202", "bearer token"]:
        assert word in info, word
    assert "benchmarks follow" not in info


def _has_api(app: str) -> bool:
    try:
        __import__(f"{app}.api.urls")
    except ImportError:
        return False
    return True
