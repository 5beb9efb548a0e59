"""Data quality in the Airflow UI: a plugin of the provider, served by Airflow's API server behind its login.

* :mod:`.settings` — the ``[dq_contracts]`` configuration section (results table, warehouse, storage connection);
* :mod:`.views` — what the pages show, read through the results port (no Airflow: who may see what is passed in);
* :mod:`.pages` — server-rendered HTML (inline CSS and SVG, no script, everything escaped);
* :mod:`.app` — the FastAPI app (pages and the JSON API ``/api/v1``), every route behind Airflow's auth;
* :mod:`.plugin` — the ``AirflowPlugin`` registered under the ``airflow.plugins`` entry point.

Imports no pyspark (an Airflow-side package; import-linter checks it). Users: ``docs/ui.md``.
"""
