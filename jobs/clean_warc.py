"""spark-submit entry point: ``spark-submit jobs/clean_warc.py --input ... --output ...``.

Takes the same flags as ``warcplex run``. Ship the library with ``--py-files dist/warcplex.zip``
(``make dist``), or install the package on the cluster's Python.
"""

import sys

from pipeline.cli import spark_submit_main

if __name__ == "__main__":
    sys.exit(spark_submit_main())
