# syncd container image: static binaries on distroless, running as non-root:
# syncd, and syncd-render beside it (syncd runs each render in it).
# The build line is hack/build.sh, which CI runs too (docker does not run in
# CI), so the image and the tested binary are built the same way.
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
ARG COMMIT=unknown
RUN VERSION=${VERSION} COMMIT=${COMMIT} ./hack/build.sh /out/syncd

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/syncd /out/syncd-render /usr/local/bin/
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/syncd"]
CMD ["run", "--config", "/etc/syncd/syncd.yaml"]
