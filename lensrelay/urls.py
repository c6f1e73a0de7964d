from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from lensrelay import views
from lensrelay.access import oauth_urls
from lensrelay.api import api
from lensrelay.files import views as files
from lensrelay.observability import views as observability
from lensrelay.sync import ysweet
from mcp_tools.api import urls as mcp_urls

urlpatterns = [
    path("", views.home, name="home"),
    path("favicon.ico", views.favicon, name="favicon"),
    # An invitation's link (manage.py invite): choose a password, once.
    path(
        "accounts/password/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(post_reset_login=False),
        name="password_reset_confirm",
    ),
    path(
        "accounts/password/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
    path("admin/", admin.site.urls),
    path("", include(oauth_urls.urlpatterns)),
    path("api/", api.urls),
    path("d/<str:doc_id>/as-update", ysweet.as_update, name="doc-as-update"),
    path("d/<str:doc_id>/update", ysweet.apply_update, name="doc-update"),
    path("d/<str:doc_id>/versions", ysweet.versions, name="doc-versions"),
    path("d/<str:doc_id>/versions/<str:version_id>", ysweet.version, name="doc-version"),
    path("doc/new", ysweet.new_doc, name="doc-new"),
    path("doc/<str:doc_id>/auth", ysweet.auth_doc, name="doc-auth"),
    path("doc/<str:doc_id>/as-update", ysweet.server_as_update, name="doc-server-as-update"),
    path("doc/<str:doc_id>/update", ysweet.server_update, name="doc-server-update"),
    path("check_store", ysweet.check_store, name="check-store"),
    # y-sweet file routes (lensrelay/files): fixed names before the <hash> route.
    path("f/<str:doc_id>/upload-url", files.upload_url, name="file-upload-url"),
    path("f/<str:doc_id>/download-url", files.download_url, name="file-download-url"),
    path("f/<str:doc_id>/upload", files.upload, name="file-upload"),
    path("f/<str:doc_id>/download", files.download, name="file-download"),
    path("f/<str:doc_id>/history", files.history, name="file-history"),
    path("f/<str:doc_id>/<str:hash>", files.delete, name="file-delete"),
    path("f/<str:doc_id>", files.exists, name="file-exists"),
    path("ready", ysweet.ready, name="ready"),
    path("metrics", observability.metrics, name="metrics"),
    path("mcp", mcp_urls),
]
