"""The API's schema grouped by app: each path is tagged with the app whose view answers it, and each tag is
described by that app's api package docstring, so a new app's endpoints get their own group the day it is added."""

from django.apps import apps
from drf_spectacular.openapi import AutoSchema


def _app_of(view):
    return apps.get_containing_app_config(type(view).__module__)


def _tag(config) -> str:
    return str(config.verbose_name)


class AppSchema(AutoSchema):
    """drf-spectacular's schema with the app as the tag (its default, the first path segment, is "api" for all)."""

    def get_tags(self) -> list[str]:
        config = _app_of(self.view)
        return [_tag(config)] if config else super().get_tags()


def app_tags(result, generator, request, public):
    """A postprocessing hook: the tags in the schema, in INSTALLED_APPS order, each described by its app's api
    package's docstring."""
    used = {tag for item in result.get("paths", {}).values() for op in item.values() for tag in op.get("tags", [])}
    result["tags"] = [
        {"name": _tag(config), "description": _description(config)}
        for config in apps.get_app_configs()
        if _tag(config) in used
    ]
    return result


def _description(config) -> str:
    try:
        module = __import__(f"{config.name}.api", fromlist=["api"])
    except ImportError:
        return ""
    return " ".join((module.__doc__ or "").split())
