"""Privacy people can read: the notice of a prompt, the levels students confirm, their page and API."""
