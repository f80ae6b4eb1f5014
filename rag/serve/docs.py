"""/docs (Swagger UI) and /redoc served with no network: their scripts and styles come from the
pinned fastapi-offline package's static folder, not from a CDN (FastAPI's default, which left
/docs a blank page offline).

Only the package's files are used, not its FastAPIOffline class: the app keeps FastAPI itself,
and ReDoc is told not to fetch Google's fonts."""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

ASSETS = "/docs-assets"


def assets_folder() -> Path:
    return Path(str(files("fastapi_offline") / "static"))


def install_docs(app: FastAPI) -> None:
    """Call with FastAPI(docs_url=None, redoc_url=None)."""
    app.mount(ASSETS, StaticFiles(directory=assets_folder()), name="docs-assets")
    title = app.title

    @app.get("/docs", include_in_schema=False)
    async def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url, title=f"{title} - docs",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon.png",
            swagger_ui_parameters={"persistAuthorization": True})

    @app.get("/redoc", include_in_schema=False)
    async def redoc() -> HTMLResponse:
        return get_redoc_html(openapi_url=app.openapi_url, title=f"{title} - ReDoc",
                              redoc_js_url=f"{ASSETS}/redoc.standalone.js",
                              redoc_favicon_url=f"{ASSETS}/favicon.png", with_google_fonts=False)
