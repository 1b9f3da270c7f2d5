"""The API root (/api/v1/): the schema, its docs and each of Tarn's apps' endpoints (its `api/urls.py`, found from
INSTALLED_APPS: a new app's API is served the day the app is installed)."""

from importlib.util import find_spec

from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from appliance.apps import product_apps

urlpatterns = [
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api:schema"), name="docs"),
    *(
        path("", include(f"{app}.api.urls"))
        for app in product_apps()
        if find_spec(f"{app}.api") and find_spec(f"{app}.api.urls")
    ),
]
