"""The launcher and everything that knows daphne, Twisted or autobahn (the fast paths), the ready route."""
