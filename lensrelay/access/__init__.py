"""Who may do what: API tokens, the one token check, bearer headers and body limits, live revocation."""
