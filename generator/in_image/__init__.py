"""Code that runs inside the user's image, not in the launcher: the reference claim client a runtime copies into its
image (sandbox_client, the standard library only) and `smoke`'s probe, shipped in the recipe ConfigMap and run on the
Ray head (smoke_probe, the standard library and ray). Each file stands alone: import-linter's contracts forbid it
any other module of the package and any third-party package the image may lack."""
