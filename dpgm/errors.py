"""User-facing errors: each carries one line that names the problem; CLIs exit with code 2."""


class DpgmError(Exception):
    """Base class for errors caused by the user's input, configuration or budget."""


class DataError(DpgmError):
    """A data file is missing, malformed, non-binary or empty."""


class ConfigError(DpgmError):
    """A configuration file or override is invalid."""


class PrivacyBudgetError(DpgmError):
    """A charge would exceed the privacy budget; raised before the mechanism touches data."""
