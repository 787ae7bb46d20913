"""Point-in-time data: price sources, validation and the market view."""
