# gobgpd at the version outagewatch links against.
FROM golang:1.26-bookworm AS build
RUN CGO_ENABLED=0 go install github.com/osrg/gobgp/v3/cmd/gobgpd@v3.37.0 github.com/osrg/gobgp/v3/cmd/gobgp@v3.37.0

FROM debian:bookworm-slim
COPY --from=build /go/bin/gobgpd /go/bin/gobgp /usr/local/bin/
ENTRYPOINT []
