from django.urls import path

from pools import views

urlpatterns = [
    path("", views.pool_list, name="pool-list"),
    path("shares/", views.share_list, name="share-list"),
]
