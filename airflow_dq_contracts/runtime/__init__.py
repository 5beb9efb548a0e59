"""The Spark runtime a job needs: Delta's jars (``jars``), the Spark settings they imply
(``spark_config``) and the JVM class-data archive that shortens a driver's start (``jvm_archive``).

Plain Python: nothing here imports ``pyspark`` or Airflow.
"""
