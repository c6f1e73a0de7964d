"""Backups: one archive of the database's rows and the file blobs at one point of the update log
(`manage.py backup`), restored into an empty database and storage (`manage.py restore`)."""
