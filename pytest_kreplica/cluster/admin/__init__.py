"""The half of the Cluster API that Kafka's own protocol answers, shared by every backend:
the admin client (``cluster``), offsets and partition metadata in bulk, closing clients,
a raw ApiVersions probe."""
