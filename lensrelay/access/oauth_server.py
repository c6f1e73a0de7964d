"""The OAuth 2.1 authorization server for assistants (MCP's authorization flow), on django-oauth-toolkit.

django-oauth-toolkit does the protocol (RFC 8414 metadata, RFC 7591 registration, client ID metadata
documents, authorization code with PKCE S256, rotating refresh tokens with replay protection, RFC 7009
revocation, RFC 8707 resource indicators); this module narrows it to Lens Relay:
- `LensRelayValidator`: a token is issued only for a resource of this server (its root, `/mcp`, `/api`);
  a code used again revokes what it issued, and a failed PKCE check burns the code (`oauth_codes`);
- `RegistrationLimit`: open dynamic registration, within a size and an hourly limit;
- `ClientMetadataFetcher`: client ID metadata documents fetched with a timeout, a size limit and the
  SSRF guard (public addresses only), with a loopback override for the test configuration;
- `ConsentView`: the authorization page: a signed-in staff person names the role and folders the client
  gets, within their own rights, and the grant (`lensrelay.access.oauth`) is recorded. Every response it
  sends back to the client, the code or an error, names the issuer (`iss`, RFC 9207: the client checks it
  against the metadata's `issuer`, which defeats mix-up attacks); `ServerMetadataView` says so.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any
from urllib.parse import unquote_plus, urlencode, urlparse, urlunparse

import urllib3
from django import forms
from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from oauth2_provider import cimd
from oauth2_provider.forms import AllowForm
from oauth2_provider.models import Application, Grant
from oauth2_provider.oauth2_validators import OAuth2Validator
from oauth2_provider.settings import oauth2_settings
from oauth2_provider.views import AuthorizationView, OAuthServerMetadataView
from oauthlib.oauth2.rfc6749 import errors

from lensrelay.access.csp import admin_csp
from lensrelay.access.oauth import (
    GrantRefused,
    client_label,
    grant_create,
    grantable_roles,
    resource_identifiers,
)
from lensrelay.access.oauth_codes import (
    Issued,
    code_burn,
    code_replay_revoke,
    code_spend,
    pkce_verified,
)
from lensrelay.models import ApiToken, Folder

logger = logging.getLogger(__name__)

MAX_REGISTRATION_BYTES = 16 * 1024
MAX_REDIRECT_URIS = 10


def own_resource(resource: str, *, host: str) -> bool:
    """Whether `resource` names this server (reached as `host`): its root, /mcp or /api."""
    parsed = urlparse(resource)
    public = str(getattr(settings, "LENSRELAY_PUBLIC_URL", "") or "")
    hosts = {host.lower()} | ({urlparse(public).netloc.lower()} if public else set())
    return (
        parsed.netloc.lower() in hosts
        and parsed.path.rstrip("/") in ("", "/mcp", "/api")
        and not parsed.query
        and not parsed.fragment
    )


def consent_csp(*, host: str, redirect_uri: str) -> str:
    """The admin's policy, except that the consent form may lead to the client's registered redirect URI
    (browsers apply `form-action` to the redirect that follows the POST). `redirect_uri` was checked
    against the client's registration before the page was rendered."""
    policy = admin_csp(host=host)
    parsed = urlparse(redirect_uri)
    if not parsed.scheme or any(c in redirect_uri for c in " ;,'\"\n\r"):
        return policy
    source = f"{parsed.scheme}://{parsed.netloc}" if parsed.netloc else f"{parsed.scheme}:"
    return policy.replace("form-action 'self'", f"form-action 'self' {source}")


def authorization_issuer(request: HttpRequest) -> str:
    """The issuer as the authorization server metadata states it (`issuer`): both derive it the same way."""
    return str(oauth2_settings.oauth2_authorization_server_issuer(request))


def with_issuer(uri: str, issuer: str) -> str:
    """`uri`, an authorization response, naming its issuer (RFC 9207): one `iss`, any the registered
    redirect URI carried dropped, in the query (in the fragment for a response sent there). The other
    parameters stay as they were written."""
    parts = urlparse(uri)
    if parts.fragment:
        return urlunparse(parts._replace(fragment=_with_param(parts.fragment, "iss", issuer)))
    return urlunparse(parts._replace(query=_with_param(parts.query, "iss", issuer)))


def _with_param(component: str, name: str, value: str) -> str:
    kept = [pair for pair in component.split("&") if pair and unquote_plus(pair.split("=", 1)[0]) != name]
    return "&".join([*kept, urlencode({name: value})])


class ServerMetadataView(OAuthServerMetadataView):
    """RFC 8414 metadata, saying that authorization responses carry `iss` (RFC 9207), as `ConsentView` makes
    them: clients that see it refuse a response without it, or with another issuer."""

    def get(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        response = super().get(request, *args, **kwargs)
        data = json.loads(response.content)
        data["authorization_response_iss_parameter_supported"] = True
        shown = JsonResponse(data, status=response.status_code)
        for header, value in response.items():
            if header.lower() not in ("content-type", "content-length"):
                shown[header] = value
        return shown


class CodeAlreadySpent(errors.InvalidGrantError):
    """invalid_grant from `invalidate_authorization_code`, which oauthlib calls outside its error handling:
    django-oauth-toolkit then answers with the error's own headers only, so they name the JSON body."""

    @property
    def headers(self) -> dict[str, str]:
        return {
            **super().headers,
            "Content-Type": "application/json",
            "Cache-Control": "no-store",
            "Pragma": "no-cache",
        }


class LensRelayValidator(OAuth2Validator):
    """django-oauth-toolkit's validator, refusing (invalid_target) tokens for any other resource; a code
    used twice revokes what it issued and a failed PKCE check burns the code (`oauth_codes`)."""

    def validate_code(
        self, client_id: str, code: str, client: Any, request: Any, *args: Any, **kwargs: Any
    ) -> bool:
        grant = Grant.objects.filter(code=code, application=client).select_related("application").first()
        if grant is None:
            code_replay_revoke(code=code, application=client)
            return False  # invalid_grant, replayed or not
        # oauthlib checks the verifier only after this, and a failure there leaves the code usable.
        if not pkce_verified(grant=grant, verifier=request.code_verifier):
            code_burn(grant=grant)
            if not request.code_verifier:
                raise errors.MissingCodeVerifierError(request=request)
            return False
        return bool(super().validate_code(client_id, code, client, request, *args, **kwargs))

    def _create_access_token(
        self, expires: Any, request: Any, token: Any, source_refresh_token: Any = None
    ) -> Any:
        access_token = super()._create_access_token(expires, request, token, source_refresh_token)
        if request.grant_type == "authorization_code":
            request.lensrelay_access_checksum = access_token.token_checksum
        return access_token

    def _create_refresh_token(
        self, request: Any, refresh_token_code: Any, access_token: Any, previous_refresh_token: Any
    ) -> Any:
        refresh_token = super()._create_refresh_token(
            request, refresh_token_code, access_token, previous_refresh_token
        )
        if request.grant_type == "authorization_code":
            request.lensrelay_token_family = refresh_token.token_family
        return refresh_token

    def invalidate_authorization_code(
        self, client_id: str, code: str, request: Any, *args: Any, **kwargs: Any
    ) -> None:
        issued = Issued(
            access_token_checksum=getattr(request, "lensrelay_access_checksum", ""),
            token_family=getattr(request, "lensrelay_token_family", None),
        )
        user_id = getattr(request.user, "pk", None)
        if not code_spend(code=code, application=request.client, user_id=user_id, issued=issued):
            raise CodeAlreadySpent(request=request)

    def _validate_resource_uris(self, request: Any, resources: Any) -> None:
        super()._validate_resource_uris(request, resources)
        host = str(request.headers.get("HTTP_HOST", ""))
        for resource in resources:
            if not own_resource(resource, host=host):
                raise errors.CustomOAuth2Error(
                    error="invalid_target",
                    description=f"The resource {resource!r} is not served here: ask for this server's /mcp.",
                    request=request,
                )


class RegistrationLimit:
    """Open dynamic client registration (MCP clients register themselves), bounded: a small body, a
    few redirect URIs, and at most LENSRELAY_OAUTH_REGISTRATIONS_PER_HOUR new clients an hour."""

    def has_permission(self, request: HttpRequest) -> bool:
        body = request.body
        if len(body) > MAX_REGISTRATION_BYTES:
            return False
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            return True  # the registration view answers invalid JSON itself
        uris = data.get("redirect_uris") if isinstance(data, dict) else None
        if isinstance(uris, list) and len(uris) > MAX_REDIRECT_URIS:
            return False
        limit = int(settings.LENSRELAY_OAUTH_REGISTRATIONS_PER_HOUR)
        recent = Application.objects.filter(created__gte=timezone.now() - timedelta(hours=1)).count()
        return recent < limit


class ClientMetadataFetcher(cimd.SafeMetadataFetcher):
    """Fetches a client ID metadata document (the client id is its HTTPS URL).

    In production django-oauth-toolkit's fetcher does it: https only, every resolved address public (no
    private, loopback or link-local target), the connection pinned to the checked address, a timeout
    (CIMD_FETCH_TIMEOUT_SECONDS) and a size limit (CIMD_MAX_DOCUMENT_SIZE). The test configuration
    (LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK) also fetches https://127.0.0.1:<port>/… without verifying the
    certificate, with the same timeout and size limit, so tests can serve documents themselves.
    """

    def fetch(self, client_id: str) -> tuple[dict[str, Any], int]:
        parsed = urlparse(client_id)
        if settings.LENSRELAY_OAUTH_CIMD_ALLOW_LOOPBACK and parsed.hostname == "127.0.0.1":
            return self._fetch_loopback(client_id)
        result: tuple[dict[str, Any], int] = super().fetch(client_id)
        return result

    def _fetch_loopback(self, client_id: str) -> tuple[dict[str, Any], int]:
        cimd._validate_client_id_url(client_id)
        timeout = float(cimd.oauth2_settings.CIMD_FETCH_TIMEOUT_SECONDS)
        http = urllib3.PoolManager(cert_reqs="CERT_NONE", retries=False)
        try:
            response = http.request(
                "GET",
                client_id,
                headers={"Accept": "application/json"},
                redirect=False,
                preload_content=False,
                timeout=urllib3.Timeout(total=timeout),
            )
        except urllib3.exceptions.HTTPError as exc:
            raise cimd.CIMDError(f"could not fetch client_id document: {exc}") from exc
        try:
            result: tuple[dict[str, Any], int] = self._read_document(response)
            return result
        finally:
            response.release_conn()


class ConsentForm(AllowForm):
    """django-oauth-toolkit's hidden request fields, plus what the person grants."""

    role = forms.ChoiceField(choices=())
    folders = forms.ModelMultipleChoiceField(
        queryset=Folder.objects.none(),
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every folder, including folders created later.",
    )


class ConsentView(AuthorizationView):
    """/oauth/authorize/: sign in (the admin's login page), then name what the client may do."""

    template_name = "oauth/consent.html"
    form_class = ConsentForm

    def get_form(self, form_class: Any = None) -> Any:
        form = super().get_form(form_class)
        roles = grantable_roles(self.request.user)
        labels = dict(ApiToken.Role.choices)
        form.fields["role"].choices = [(role, labels[role]) for role in roles]
        if roles:
            form.fields["role"].initial = (
                ApiToken.Role.SUGGEST if ApiToken.Role.SUGGEST in roles else roles[-1]
            )
        form.fields["folders"].queryset = Folder.objects.order_by("name")
        return form

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        user = request.user
        params = request.GET if request.method == "GET" else request.POST
        # Without a method a challenge counts as "plain" (RFC 7636): S256 only, named or refused.
        if params.get("code_challenge") and params.get("code_challenge_method") != "S256":
            return self._render_refusal(
                request, "Only PKCE with S256 is accepted; nothing was granted.", status=400
            )
        if user.is_authenticated and not grantable_roles(user):
            return self._render_refusal(
                request, "Only active staff can connect an assistant. Ask an administrator for access."
            )
        if request.method == "GET":
            refused = self._foreign_resource(request, request.GET.getlist("resource"))
            if refused:
                return refused
        response = super().dispatch(request, *args, **kwargs)
        response["Content-Security-Policy"] = consent_csp(
            host=request.get_host(),
            redirect_uri=str(getattr(self, "oauth2_data", {}).get("redirect_uri") or ""),
        )
        response["X-Frame-Options"] = "DENY"
        return response

    def redirect(self, redirect_to: str, application: Any) -> Any:
        """Every way back to the client (the code, access_denied and the other errors it may be told) names
        this server as the issuer (RFC 9207)."""
        return super().redirect(with_issuer(redirect_to, authorization_issuer(self.request)), application)

    def _foreign_resource(self, request: HttpRequest, resources: list[str]) -> HttpResponse | None:
        own = set(resource_identifiers(request).values())
        for resource in resources:
            if resource.rstrip("/") not in own and not own_resource(resource, host=request.get_host()):
                return self._render_refusal(
                    request, f"The resource {resource!r} is not served here; nothing was granted.", status=400
                )
        return None

    def _render_refusal(self, request: HttpRequest, message: str, *, status: int = 403) -> HttpResponse:
        response = self.response_class(
            request=request,
            template=[self.template_name],
            context={"refusal": message, "title": "Connect an assistant"},
            status=status,
        )
        response.render()
        response["Content-Security-Policy"] = admin_csp(host=request.get_host())
        return response

    def get_context_data(self, **kwargs: Any) -> dict[str, Any]:
        context = super().get_context_data(**kwargs)
        application = context.get("application")
        context["title"] = "Connect an assistant"
        if application is not None:
            context["client_label"] = client_label(application)
            context["client_host"] = urlparse(str(context.get("redirect_uri") or "")).netloc
        return context

    def form_valid(self, form: Any) -> Any:
        if not form.cleaned_data.get("allow"):
            return super().form_valid(form)
        refused = self._foreign_resource(self.request, str(form.cleaned_data.get("resource") or "").split())
        if refused:
            return refused
        application = Application.objects.filter(client_id=form.cleaned_data["client_id"]).first()
        role = str(form.cleaned_data.get("role") or "")
        if application is None or role not in grantable_roles(self.request.user):
            return self._render_refusal(
                self.request, "That role is above your own rights; nothing was granted."
            )
        response = super().form_valid(form)
        if response.status_code in (301, 302) and "code=" in response.get("Location", ""):
            try:
                grant_create(
                    user=self.request.user,
                    application=application,
                    role=role,
                    folders=form.cleaned_data.get("folders") or (),
                )
            except GrantRefused as exc:
                return self._render_refusal(self.request, str(exc))
        return response
