"""The site's HTTP plumbing shared by every app: the JSON renderer, the API's one error shape,
throttles, the upload size limit. It imports Django and DRF, never an app of the site
(kernels, search, evaluator) nor archive_site, so every app may import it (docs/architecture.md)."""
