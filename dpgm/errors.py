"""User-facing errors: each carries one line that names the problem; CLIs exit with code 2.

Bad data and bad settings are also ``ValueError``s, as Python and scikit-learn expect of a value that
is refused (``except ValueError`` catches them); an exceeded budget is not."""


class DpgmError(Exception):
    """Base class for errors caused by the user's input, configuration or budget."""


class DataError(DpgmError, ValueError):
    """A data file is missing, malformed, non-binary or empty."""


class ConfigError(DpgmError, ValueError):
    """A configuration file or override is invalid."""


class PrivacyBudgetError(DpgmError):
    """A charge would exceed the privacy budget; raised before the mechanism touches data."""
