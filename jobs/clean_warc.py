"""spark-submit entry point: ``spark-submit jobs/clean_warc.py --input ... --output ...``.

Takes the same flags as ``warcplex run``. Ship the library with ``--py-files dist/pipeline.zip``
(``make dist``); run from a checkout, it imports ``pipeline`` from the checkout.
"""

import os
import sys

try:
    import warcplex  # noqa: F401  (from --py-files or an installed package)
except ImportError:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from warcplex.spark.job import CleanWarcJob

if __name__ == "__main__":
    sys.exit(CleanWarcJob().main())
