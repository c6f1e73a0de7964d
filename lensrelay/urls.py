from django.contrib import admin
from django.urls import path

from lensrelay import views, ysweet
from lensrelay.api import api
from mcp_tools.api import urls as mcp_urls

urlpatterns = [
    path("", views.home, name="home"),
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("d/<str:doc_id>/as-update", ysweet.as_update, name="doc-as-update"),
    path("d/<str:doc_id>/update", ysweet.apply_update, name="doc-update"),
    path("doc/new", ysweet.new_doc, name="doc-new"),
    path("ready", ysweet.ready, name="ready"),
    path("mcp", mcp_urls),
]
