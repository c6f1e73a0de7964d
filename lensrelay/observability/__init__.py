"""Prometheus metrics: their definitions (`metrics`), what is counted only when scraped (`scrape`), the
`/metrics` route and its protection. Below every other package, so anything may count something."""
