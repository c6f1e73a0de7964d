"""The URLconf of `/ready` alone (`lensrelay.server.readyroute`); `lensrelay.urls` has the same route too."""

from django.urls import path

from lensrelay.sync import ysweet

urlpatterns = [
    path("ready", ysweet.ready, name="ready"),
]
