"""The batch job: config, run ids, reading the source, writing the outputs, exit statuses."""
