"""Directory API routes (mounted under /api/v1/)."""

from rest_framework.routers import SimpleRouter

from directory.api import views

router = SimpleRouter(trailing_slash=True)
router.register("directory-members", views.DomainMemberViewSet, basename="directory-member")
router.register("directory-ldap", views.LdapDirectoryViewSet, basename="directory-ldap")
router.register("directory-names", views.DirectoryNameViewSet, basename="directory-name")
urlpatterns = router.urls
