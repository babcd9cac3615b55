"""berth's Kubernetes layer: a raw-JSON API client, reflectors, and the handlers that feed the cache.

- :mod:`app.kube.client`: :class:`~app.kube.client.KubeClient` (config and auth from the official
  ``kubernetes`` package, requests as raw JSON through its pool, token-bucket rate limited).
- :mod:`app.kube.informer`: list + watch per resource, with relist on 410 and backoff.
- :mod:`app.kube.handlers`: node/pod events into the scheduler cache, other kinds into the
  engine's cluster objects.
"""
